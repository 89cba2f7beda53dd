import { useEffect, useState } from 'preact/hooks'
import { api, type Rule, type RulePreview, type RulePreviewBody } from '../api.ts'
import { ErrorBox } from './common.tsx'
import { time } from '../format.ts'

// The Rules page's two forms: the rule as a draft to save (PUT /v3/admin/shops/{shop}/rule) and
// the preview of an order's points (POST …/rule/preview), under the current rule or the draft.
// Values go to the API as typed: what it refuses comes back as its 422, with the fields named.

/** The rule's options as the form holds them: text for numbers and rates, flags as they are. */
export interface RuleDraft {
  points_per_unit: string
  currency_rates: string
  include_shipping: boolean
  include_tax: boolean
  exclude_giftcard: boolean
  earn_on: string
  pending_days: string
  expire_after_days: string
  signup_points: string
  newsletter_points: string
  /** "staff, wholesale" */
  exclude_tags: string
  /** "Silver:100, Gold:1000:1.5", as rules set --tier takes them */
  tiers: string
  tier_window_days: string
  /** "vip=Gold" */
  tag_tiers: string
  /** "30, 7, 1" */
  expiry_warning_days: string
  tier_warning_days: string
  referral_points: string
  referral_friend_points: string
  /** A reward's id; empty for none. */
  referral_friend_reward: string
  referral_min_subtotal: string
  referral_days: string
  referral_cap_per_month: string
  birthday_points: string
  /** Actions a shop reports, each as typed; an empty limit count is no limit. */
  activities: ActivityDraft[]
}

/** One action of the rule as the form holds it. */
export interface ActivityDraft {
  action: string
  points: string
  limit_count: string
  limit_per: string
}

const PERIODS = ['day', 'week', 'month', 'year', 'ever'] as const

/** A list typed with commas (or semicolons, or new lines), empty entries left out. */
const listOf = (text: string) =>
  text
    .split(/[,;\n]+/)
    .map((e) => e.trim())
    .filter((e) => e !== '')

export function draftOf(rule: Rule): RuleDraft {
  return {
    points_per_unit: String(rule.points_per_unit),
    currency_rates: Object.entries(rule.currency_rates)
      .map(([currency, rate]) => `${currency}=${rate}`)
      .join(', '),
    include_shipping: rule.include_shipping,
    include_tax: rule.include_tax,
    exclude_giftcard: rule.exclude_giftcard,
    earn_on: rule.earn_on,
    pending_days: String(rule.pending_days),
    expire_after_days: String(rule.expire_after_days),
    signup_points: String(rule.signup_points),
    newsletter_points: String(rule.newsletter_points),
    exclude_tags: rule.exclude_tags.join(', '),
    tiers: rule.tiers.map((t) => `${t.name}:${t.points}${t.multiplier === 1 ? '' : `:${t.multiplier}`}`).join(', '),
    tier_window_days: String(rule.tier_window_days),
    tag_tiers: Object.entries(rule.tag_tiers)
      .map(([tag, tier]) => `${tag}=${tier}`)
      .join(', '),
    expiry_warning_days: rule.expiry_warning_days.join(', '),
    tier_warning_days: String(rule.tier_warning_days),
    referral_points: String(rule.referral_points),
    referral_friend_points: String(rule.referral_friend_points),
    referral_friend_reward: rule.referral_friend_reward === null ? '' : String(rule.referral_friend_reward),
    referral_min_subtotal: rule.referral_min_subtotal,
    referral_days: String(rule.referral_days),
    referral_cap_per_month: String(rule.referral_cap_per_month),
    birthday_points: String(rule.birthday_points),
    activities: rule.activities.map((a) => ({
      action: a.action,
      points: String(a.points),
      limit_count: a.limit === null ? '' : String(a.limit.count),
      limit_per: a.limit === null ? 'month' : a.limit.per,
    })),
  }
}

/** A number as typed; an empty field is null, which the API refuses with the field's name. */
const numberOf = (text: string) => (text.trim() === '' ? null : Number(text.trim()))

/** The draft as the rule PUT takes. "EUR=2, USD=1.5" are the currency rates; an entry without a rate is sent as null, and refused by name. */
export function ruleOfDraft(d: RuleDraft): Rule {
  const rates: Record<string, number | null> = {}
  for (const entry of d.currency_rates.split(/[\s,;]+/).filter((e) => e !== '')) {
    const [currency = '', rate = ''] = entry.split('=')
    rates[currency.trim()] = numberOf(rate)
  }
  return {
    points_per_unit: numberOf(d.points_per_unit),
    currency_rates: rates,
    include_shipping: d.include_shipping,
    include_tax: d.include_tax,
    exclude_giftcard: d.exclude_giftcard,
    earn_on: d.earn_on,
    pending_days: numberOf(d.pending_days),
    expire_after_days: numberOf(d.expire_after_days),
    signup_points: numberOf(d.signup_points),
    newsletter_points: numberOf(d.newsletter_points),
    exclude_tags: listOf(d.exclude_tags),
    // NAME:POINTS[:MULTIPLIER]: a part that is not a number is sent as null, and refused by name.
    tiers: listOf(d.tiers).map((entry) => {
      const [name = '', points = '', multiplier] = entry.split(':').map((p) => p.trim())
      return { name, points: numberOf(points), multiplier: multiplier === undefined ? 1 : numberOf(multiplier) }
    }),
    tier_window_days: numberOf(d.tier_window_days),
    tag_tiers: Object.fromEntries(
      listOf(d.tag_tiers).map((entry) => {
        const at = entry.lastIndexOf('=')
        return at < 0 ? [entry, ''] : [entry.slice(0, at).trim(), entry.slice(at + 1).trim()]
      }),
    ),
    expiry_warning_days: listOf(d.expiry_warning_days).map(numberOf),
    tier_warning_days: numberOf(d.tier_warning_days),
    referral_points: numberOf(d.referral_points),
    referral_friend_points: numberOf(d.referral_friend_points),
    referral_friend_reward: numberOf(d.referral_friend_reward),
    referral_min_subtotal: d.referral_min_subtotal.trim(),
    referral_days: numberOf(d.referral_days),
    referral_cap_per_month: numberOf(d.referral_cap_per_month),
    birthday_points: numberOf(d.birthday_points),
    activities: d.activities.map((a) => ({
      action: a.action.trim(),
      points: numberOf(a.points),
      limit: a.limit_count.trim() === '' ? null : { count: numberOf(a.limit_count), per: a.limit_per },
    })),
  } as unknown as Rule
}

const text = (e: Event) => (e.currentTarget as HTMLInputElement).value
const checked = (e: Event) => (e.currentTarget as HTMLInputElement).checked

/** How the tier fields are written, in full and wrapping with the page (a placeholder is cut off at the input's width). */
function TierHelp() {
  return (
    <div class="help" id="tier-help" data-help="tiers">
      <p>
        <strong>VIP tiers</strong>: each tier as <code>name:points</code> or <code>name:points:multiplier</code>, separated by commas, for example{' '}
        <code>Silver:100, Gold:1000:1.5</code>, each tier's points above the one before. A customer holds the highest tier whose points they reach: the base
        points (before any multiplier) of their orders processed within the last <em>tier window days</em>, net of refunds and cancels. Spending never lowers a
        tier. An order earns its points × the multiplier of the tier its customer held when it was processed, rounded down; without a multiplier, 1. Empty: no
        tiers.
      </p>
      <p>
        <strong>Tag tiers</strong>: <code>tag=tier</code>, separated by commas, for example <code>vip=Gold, staff=Silver</code>: a customer with the tag holds
        at least that tier, which must be one of the VIP tiers.
      </p>
    </div>
  )
}

/** The actions a shop reports: a row each (name, points, an optional limit per period), added and removed in place. */
function ActivitiesField({ activities, onChange }: { activities: ActivityDraft[]; onChange: (a: ActivityDraft[]) => void }) {
  const setAt = (i: number, change: Partial<ActivityDraft>) => onChange(activities.map((a, j) => (j === i ? { ...a, ...change } : a)))
  return (
    <fieldset class="grow activities" data-field="activities">
      <legend>Actions a shop reports</legend>
      {activities.map((a, i) => (
        <div class="activity" data-activity={i}>
          <label>
            Action <input name={`activity_action_${i}`} size={14} placeholder="review" value={a.action} onInput={(e) => setAt(i, { action: text(e) })} />
          </label>
          <label>
            Points <input name={`activity_points_${i}`} inputMode="numeric" size={6} value={a.points} onInput={(e) => setAt(i, { points: text(e) })} />
          </label>
          <label>
            Up to{' '}
            <input
              name={`activity_limit_count_${i}`}
              inputMode="numeric"
              size={4}
              placeholder="no limit"
              value={a.limit_count}
              onInput={(e) => setAt(i, { limit_count: text(e) })}
            />
          </label>
          <label>
            per{' '}
            <select
              name={`activity_limit_per_${i}`}
              value={a.limit_per}
              onChange={(e) => setAt(i, { limit_per: (e.currentTarget as HTMLSelectElement).value })}
            >
              {PERIODS.map((p) => (
                <option value={p}>{p}</option>
              ))}
            </select>
          </label>
          <button type="button" name={`remove_activity_${i}`} onClick={() => onChange(activities.filter((_, j) => j !== i))}>
            Remove
          </button>
        </div>
      ))}
      <button type="button" name="add_activity" onClick={() => onChange([...activities, { action: '', points: '', limit_count: '', limit_per: 'month' }])}>
        Add an action
      </button>
      <span class="muted"> (reported by the shop; periods in the shop's time zone; an empty limit: no limit)</span>
    </fieldset>
  )
}

/** The change form: every option of the rule, saved as a new version in effect from now. */
export function RuleForm({ shop, draft, onDraft, onSaved }: { shop: string; draft: RuleDraft; onDraft: (d: RuleDraft) => void; onSaved: () => void }) {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(null)
  const set = (change: Partial<RuleDraft>) => onDraft({ ...draft, ...change })
  const submit = async (e: Event) => {
    e.preventDefault()
    setBusy(true)
    setError(null)
    try {
      await api('PUT', '/v3/admin/shops/{shop}/rule', { params: { shop }, body: ruleOfDraft(draft) })
      onSaved()
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  return (
    <form class="card rule-form" onSubmit={submit}>
      <h2>Change the rule</h2>
      <p class="muted">
        Saved as a new version, in effect from now for orders that change afterwards (<code>points rebuild</code> applies it to all). Expiry switched on or
        shortened never expires points at once. Bonuses, exclusions and tiers count from now: for customers created, subscriptions dated and orders processed
        from now on.
      </p>
      <div class="fields">
        <label>
          Points per unit{' '}
          <input name="points_per_unit" inputMode="decimal" size={8} value={draft.points_per_unit} onInput={(e) => set({ points_per_unit: text(e) })} />
        </label>
        <label class="grow">
          Currency rates{' '}
          <input
            name="currency_rates"
            placeholder="EUR=2, USD=1.5 (once any is listed, only those earn)"
            value={draft.currency_rates}
            onInput={(e) => set({ currency_rates: text(e) })}
          />
        </label>
        <label>
          Earn when{' '}
          <select name="earn_on" value={draft.earn_on} onChange={(e) => set({ earn_on: (e.currentTarget as HTMLSelectElement).value })}>
            <option value="paid">paid</option>
            <option value="fulfilled">fulfilled</option>
          </select>
        </label>
        <label>
          Pending days <input name="pending_days" inputMode="numeric" size={5} value={draft.pending_days} onInput={(e) => set({ pending_days: text(e) })} />
        </label>
        <label>
          Expire after days{' '}
          <input name="expire_after_days" inputMode="numeric" size={6} value={draft.expire_after_days} onInput={(e) => set({ expire_after_days: text(e) })} />
          <span class="muted"> (0: never)</span>
        </label>
        <label>
          Sign-up points{' '}
          <input name="signup_points" inputMode="numeric" size={8} value={draft.signup_points} onInput={(e) => set({ signup_points: text(e) })} />
        </label>
        <label>
          Newsletter points{' '}
          <input name="newsletter_points" inputMode="numeric" size={8} value={draft.newsletter_points} onInput={(e) => set({ newsletter_points: text(e) })} />
        </label>
        <label>
          Referral points{' '}
          <input name="referral_points" inputMode="numeric" size={8} value={draft.referral_points} onInput={(e) => set({ referral_points: text(e) })} />
        </label>
        <label>
          Friend's points{' '}
          <input
            name="referral_friend_points"
            inputMode="numeric"
            size={8}
            value={draft.referral_friend_points}
            onInput={(e) => set({ referral_friend_points: text(e) })}
          />
        </label>
        <label>
          Friend's reward id{' '}
          <input
            name="referral_friend_reward"
            inputMode="numeric"
            size={6}
            placeholder="none"
            value={draft.referral_friend_reward}
            onInput={(e) => set({ referral_friend_reward: text(e) })}
          />
        </label>
        <label>
          Referral minimum subtotal{' '}
          <input
            name="referral_min_subtotal"
            inputMode="decimal"
            size={8}
            value={draft.referral_min_subtotal}
            onInput={(e) => set({ referral_min_subtotal: text(e) })}
          />
        </label>
        <label>
          Referral days <input name="referral_days" inputMode="numeric" size={5} value={draft.referral_days} onInput={(e) => set({ referral_days: text(e) })} />
        </label>
        <label>
          Referrals per month{' '}
          <input
            name="referral_cap_per_month"
            inputMode="numeric"
            size={5}
            value={draft.referral_cap_per_month}
            onInput={(e) => set({ referral_cap_per_month: text(e) })}
          />
          <span class="muted"> (0: no cap)</span>
        </label>
        <label class="grow">
          Excluded tags{' '}
          <input
            name="exclude_tags"
            placeholder="staff, wholesale (these customers earn nothing)"
            value={draft.exclude_tags}
            onInput={(e) => set({ exclude_tags: text(e) })}
          />
        </label>
        <label class="grow">
          VIP tiers{' '}
          <input
            name="tiers"
            placeholder="Silver:100, Gold:1000:1.5"
            aria-describedby="tier-help"
            value={draft.tiers}
            onInput={(e) => set({ tiers: text(e) })}
          />
        </label>
        <label>
          Tier window days{' '}
          <input name="tier_window_days" inputMode="numeric" size={5} value={draft.tier_window_days} onInput={(e) => set({ tier_window_days: text(e) })} />
        </label>
        <label class="grow">
          Tag tiers{' '}
          <input name="tag_tiers" placeholder="vip=Gold" aria-describedby="tier-help" value={draft.tag_tiers} onInput={(e) => set({ tag_tiers: text(e) })} />
        </label>
        <TierHelp />
        <label>
          Warn days before expiry{' '}
          <input
            name="expiry_warning_days"
            placeholder="30, 7, 1"
            size={9}
            value={draft.expiry_warning_days}
            onInput={(e) => set({ expiry_warning_days: text(e) })}
          />
          <span class="muted"> (up to three; empty: no warning)</span>
        </label>
        <label>
          Warn days before a tier falls{' '}
          <input name="tier_warning_days" inputMode="numeric" size={4} value={draft.tier_warning_days} onInput={(e) => set({ tier_warning_days: text(e) })} />
          <span class="muted"> (0: no warning)</span>
        </label>
        <label>
          Birthday points{' '}
          <input name="birthday_points" inputMode="numeric" size={8} value={draft.birthday_points} onInput={(e) => set({ birthday_points: text(e) })} />
          <span class="muted"> (once a year, on the day in the shop's time zone; 0: none)</span>
        </label>
        <ActivitiesField activities={draft.activities} onChange={(activities) => set({ activities })} />
        <label>
          <input type="checkbox" name="include_shipping" checked={draft.include_shipping} onChange={(e) => set({ include_shipping: checked(e) })} /> shipping
          earns
        </label>
        <label>
          <input type="checkbox" name="include_tax" checked={draft.include_tax} onChange={(e) => set({ include_tax: checked(e) })} /> tax earns
        </label>
        <label>
          <input type="checkbox" name="exclude_giftcard" checked={draft.exclude_giftcard} onChange={(e) => set({ exclude_giftcard: checked(e) })} /> gift card
          amount excluded
        </label>
      </div>
      <button type="submit" class="primary" name="save-rule" disabled={busy}>
        Save as a new version
      </button>
      <ErrorBox error={error} />
    </form>
  )
}

interface OrderDraft {
  subtotal: string
  currency: string
  amount_shipping: string
  amount_tax: string
  amount_giftcard: string
  email: string
  processed_at: string
  is_paid: boolean
  is_fulfilled: boolean
  is_refunded: boolean
  cancelled: boolean
  customer_id: string
}

const NEW_ORDER: OrderDraft = {
  subtotal: '100.00',
  currency: 'EUR',
  amount_shipping: '',
  amount_tax: '',
  amount_giftcard: '',
  email: '',
  processed_at: '',
  is_paid: true,
  is_fulfilled: false,
  is_refunded: false,
  cancelled: false,
  customer_id: '',
}

/** The request: the order as a webhook would carry it (only the fields filled in), times in UTC. */
function previewBody(o: OrderDraft, rule: Rule | undefined): RulePreviewBody {
  const processedAt = o.processed_at === '' ? undefined : `${o.processed_at.length === 16 ? `${o.processed_at}:00` : o.processed_at}Z`
  const order: Record<string, unknown> = { id: 1, currency: o.currency, is_paid: o.is_paid, is_fulfilled: o.is_fulfilled, is_refunded: o.is_refunded }
  for (const field of ['subtotal', 'amount_shipping', 'amount_tax', 'amount_giftcard', 'email'] as const)
    if (o[field].trim() !== '') order[field] = o[field].trim()
  if (processedAt) order.processed_at = processedAt
  if (o.cancelled) order.cancelled_at = processedAt ?? new Date().toISOString()
  return {
    order,
    ...(o.customer_id.trim() === '' ? {} : { customer_id: Number(o.customer_id.trim()) }),
    ...(rule ? { rule } : {}),
  } as RulePreviewBody
}

/** What an order would earn: the answer of the preview, in words and figures. */
function PreviewAnswer({ p }: { p: RulePreview }) {
  return (
    <div class="notice preview-answer" data-preview role="status">
      <p>
        <strong data-points>{p.points}</strong> point{p.points === 1 ? '' : 's'}: <span data-why>{p.why}</span>
      </p>
      <dl class="facts">
        <dt>credited to</dt>
        <dd>{p.customer_id !== null ? `customer ${p.customer_id}` : p.guest_email !== null ? `guest ${p.guest_email}` : 'no one'}</dd>
        <dt>rule</dt>
        <dd>{p.rule_version !== null ? `version ${p.rule_version} (current)` : `the changes above, not saved (would be version ${p.proposed_version})`}</dd>
        {p.basis && (
          <>
            <dt>basis</dt>
            <dd>
              {p.basis.amount} {p.basis.currency ?? ''} at {p.basis.rate} per unit{p.basis.multiplier === '1' ? '' : `, × ${p.basis.multiplier}`}
            </dd>
            <dt>tier</dt>
            <dd data-tier>{p.tier ?? 'none'}</dd>
            <dt>available</dt>
            <dd data-available>{time(p.available_at)}</dd>
            <dt>expires</dt>
            <dd data-expires>{p.expires_at ? time(p.expires_at) : 'never'}</dd>
          </>
        )}
      </dl>
    </div>
  )
}

/** The preview form: an order, optionally a customer, and for an operator the draft rule instead of the current one. */
export function PreviewForm({ shop, draft, version }: { shop: string; draft: RuleDraft | null; version?: number }) {
  const [o, setO] = useState<OrderDraft>(NEW_ORDER)
  const [withDraft, setWithDraft] = useState(false)
  const [answer, setAnswer] = useState<RulePreview | null>(null)
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)
  // A saved rule is a new version: an error about the draft it was is gone with it.
  useEffect(() => setError(null), [version])
  const set = (change: Partial<OrderDraft>) => setO({ ...o, ...change })
  const submit = async (e: Event) => {
    e.preventDefault()
    setBusy(true)
    setError(null)
    try {
      setAnswer(
        await api('POST', '/v3/admin/shops/{shop}/rule/preview', {
          params: { shop },
          body: previewBody(o, withDraft && draft ? ruleOfDraft(draft) : undefined),
        }),
      )
    } catch (err) {
      setAnswer(null)
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  return (
    <form class="card rule-form preview" onSubmit={submit}>
      <h2>Preview an order's points</h2>
      <p class="muted">What an order would earn, as if it arrived now: nothing is written. Times are UTC.</p>
      <div class="fields">
        <label>
          Subtotal <input name="subtotal" inputMode="decimal" size={10} value={o.subtotal} onInput={(e) => set({ subtotal: text(e) })} />
        </label>
        <label>
          Currency <input name="currency" size={4} value={o.currency} onInput={(e) => set({ currency: text(e) })} />
        </label>
        <label>
          Shipping <input name="amount_shipping" inputMode="decimal" size={8} value={o.amount_shipping} onInput={(e) => set({ amount_shipping: text(e) })} />
        </label>
        <label>
          Tax <input name="amount_tax" inputMode="decimal" size={8} value={o.amount_tax} onInput={(e) => set({ amount_tax: text(e) })} />
        </label>
        <label>
          Gift card <input name="amount_giftcard" inputMode="decimal" size={8} value={o.amount_giftcard} onInput={(e) => set({ amount_giftcard: text(e) })} />
        </label>
        <label>
          Processed at <input name="processed_at" type="datetime-local" step={1} value={o.processed_at} onInput={(e) => set({ processed_at: text(e) })} />
        </label>
        <label>
          E-mail <input name="email" type="email" value={o.email} onInput={(e) => set({ email: text(e) })} />
        </label>
        <label>
          Customer id{' '}
          <input name="customer_id" inputMode="numeric" size={10} placeholder="optional" value={o.customer_id} onInput={(e) => set({ customer_id: text(e) })} />
        </label>
        {(['is_paid', 'is_fulfilled', 'is_refunded', 'cancelled'] as const).map((flag) => (
          <label>
            <input type="checkbox" name={flag} checked={o[flag]} onChange={(e) => set({ [flag]: checked(e) })} /> {flag.replace('is_', '')}
          </label>
        ))}
        {draft && (
          <label>
            <input type="checkbox" name="with-draft" checked={withDraft} onChange={(e) => setWithDraft(checked(e))} /> with the changes above, not saved
          </label>
        )}
      </div>
      <button type="submit" name="preview" disabled={busy}>
        Preview
      </button>
      <ErrorBox error={error} />
      {answer && <PreviewAnswer p={answer} />}
    </form>
  )
}
