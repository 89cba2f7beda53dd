import { useState } from 'preact/hooks'
import { api, enc, type Rule, type RuleVersion } from '../api.ts'
import { ErrorBox, ShopPicker, defaultShop } from '../components/common.tsx'
import { time } from '../format.ts'
import { useData } from '../hooks/use-data.ts'
import { navigate, route } from '../router.ts'
import { canChange } from '../session.ts'
import { draftOf, PreviewForm, RuleForm, type RuleDraft } from '../components/rule-forms.tsx'

// A shop's points rule (GET /v3/admin/shops/{shop}/rule): the current version with every option,
// its history (when each version took effect, who wrote it), for an operator the form that saves
// a new version, and the preview of what an order would earn, under the rule or the unsaved changes.

/** Each option of the rule in words, in the order the history's columns show them. */
const OPTIONS: { key: keyof Rule; label: string; show: (r: Rule) => string }[] = [
  { key: 'points_per_unit', label: 'points per unit', show: (r) => String(r.points_per_unit) },
  {
    key: 'currency_rates',
    label: 'currency rates',
    show: (r) =>
      Object.keys(r.currency_rates).length === 0
        ? 'any currency'
        : Object.entries(r.currency_rates)
            .map(([c, rate]) => `${c} ${rate}`)
            .join(', '),
  },
  { key: 'include_shipping', label: 'shipping', show: (r) => (r.include_shipping ? 'earns' : 'excluded') },
  { key: 'include_tax', label: 'tax', show: (r) => (r.include_tax ? 'earns' : 'excluded') },
  { key: 'exclude_giftcard', label: 'gift card', show: (r) => (r.exclude_giftcard ? 'excluded' : 'earns') },
  { key: 'earn_on', label: 'earned when', show: (r) => r.earn_on },
  { key: 'pending_days', label: 'pending days', show: (r) => String(r.pending_days) },
  { key: 'expire_after_days', label: 'expire after days', show: (r) => (r.expire_after_days === 0 ? 'never' : String(r.expire_after_days)) },
  { key: 'signup_points', label: 'sign-up', show: (r) => (r.signup_points === 0 ? 'none' : `${r.signup_points} points`) },
  { key: 'newsletter_points', label: 'newsletter', show: (r) => (r.newsletter_points === 0 ? 'none' : `${r.newsletter_points} points`) },
  { key: 'referral_points', label: 'referral', show: (r) => (r.referral_points === 0 ? 'none' : `${r.referral_points} points`) },
  {
    key: 'referral_friend_points',
    label: "friend's reward",
    show: (r) =>
      r.referral_friend_reward !== null ? `reward ${r.referral_friend_reward}` : r.referral_friend_points === 0 ? 'none' : `${r.referral_friend_points} points`,
  },
  {
    key: 'referral_days',
    label: 'referral terms',
    show: (r) =>
      `first order within ${r.referral_days} days, from ${r.referral_min_subtotal}; ${r.referral_cap_per_month === 0 ? 'no cap' : `${r.referral_cap_per_month} a month`}`,
  },
  { key: 'exclude_tags', label: 'excluded tags', show: (r) => (r.exclude_tags.length === 0 ? 'none' : r.exclude_tags.join(', ')) },
  {
    key: 'tiers',
    label: 'VIP tiers',
    show: (r) => (r.tiers.length === 0 ? 'none' : r.tiers.map((t) => `${t.name} ${t.points}${t.multiplier === 1 ? '' : ` ×${t.multiplier}`}`).join(', ')),
  },
  { key: 'tier_window_days', label: 'tier window days', show: (r) => String(r.tier_window_days) },
  {
    key: 'tag_tiers',
    label: 'tag tiers',
    show: (r) =>
      Object.keys(r.tag_tiers).length === 0
        ? 'none'
        : Object.entries(r.tag_tiers)
            .map(([tag, tier]) => `${tag} → ${tier}`)
            .join(', '),
  },
  {
    key: 'expiry_warning_days',
    label: 'expiry warning',
    show: (r) => (r.expiry_warning_days.length === 0 ? 'none' : `${r.expiry_warning_days.join(', ')} days ahead`),
  },
  { key: 'tier_warning_days', label: 'tier warning', show: (r) => (r.tier_warning_days === 0 ? 'none' : `${r.tier_warning_days} days ahead`) },
  { key: 'birthday_points', label: 'birthday', show: (r) => (r.birthday_points === 0 ? 'none' : `${r.birthday_points} points`) },
  {
    key: 'activities',
    label: 'actions',
    show: (r) =>
      r.activities.length === 0
        ? 'none'
        : r.activities
            .map(
              (a) =>
                `${a.action} ${a.points} points${a.limit === null ? '' : `, up to ${a.limit.count} ${a.limit.per === 'ever' ? 'ever' : `a ${a.limit.per}`}`}`,
            )
            .join('; '),
  },
]

const changedFrom = (v: RuleVersion, older: RuleVersion | undefined, key: keyof Rule) =>
  older !== undefined && JSON.stringify(v.rule[key]) !== JSON.stringify(older.rule[key])

function History({ history }: { history: RuleVersion[] }) {
  // A column per option is wider than the page: the table scrolls within its own box, the version in sight.
  return (
    <div class="table-scroll" data-scroll="rule-history">
      <table class="rule-history">
        <thead>
          <tr>
            <th>version</th>
            <th>in effect from</th>
            <th>by</th>
            {OPTIONS.map((o) => (
              <th>{o.label}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {history.map((v, i) => (
            <tr data-version={v.version}>
              <td>{v.version}</td>
              <td>{v.effective_at.startsWith('1970-01-01') ? 'before versions were kept' : time(v.effective_at)}</td>
              <td data-by>{v.changed_by ?? <span class="muted">not recorded</span>}</td>
              {OPTIONS.map((o) => (
                <td class={changedFrom(v, history[i + 1], o.key) ? 'changed' : ''} data-option={o.key}>
                  {o.show(v.rule)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}

export function Rules() {
  const shop = route.value.params.get('shop') ?? defaultShop()
  const [draft, setDraft] = useState<RuleDraft | null>(null)
  const {
    data: view,
    error,
    refresh,
  } = useData(shop ? () => api('GET', '/v3/admin/shops/{shop}/rule', { params: { shop } }) : null, [shop], {
    onLoad: (v) => setDraft(draftOf(v.rule)),
  })
  const current = view?.history[0]
  return (
    <main>
      <div class="toolbar">
        <h1>Points rule</h1>
        <ShopPicker value={shop} onChange={(s) => navigate(`rules?shop=${enc(s)}`)} />
      </div>
      <ErrorBox error={error} />
      {view && (
        <>
          <section class="card" data-current-rule>
            <header>
              <h2>
                Version <span data-version>{view.version}</span>
              </h2>
              <span class="muted">
                in effect from {view.effective_at.startsWith('1970-01-01') ? 'before versions were kept' : time(view.effective_at)}
                {current?.changed_by ? `, by ${current.changed_by}` : ''}
              </span>
            </header>
            <dl class="facts">
              {OPTIONS.map((o) => (
                <>
                  <dt>{o.label}</dt>
                  <dd data-option={o.key}>{o.show(view.rule)}</dd>
                </>
              ))}
            </dl>
          </section>
          {canChange.value && draft && <RuleForm shop={shop} draft={draft} onDraft={setDraft} onSaved={refresh} />}
          <PreviewForm shop={shop} draft={canChange.value ? draft : null} version={view.version} />
          <h2>History</h2>
          <p class="muted">The newest 100 versions, newest first; an option a version changed is marked.</p>
          <History history={view.history} />
        </>
      )}
    </main>
  )
}
