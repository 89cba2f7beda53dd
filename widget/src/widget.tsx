import copy from 'clipboard-copy'
import register from 'preact-custom-element'
import { useCallback, useEffect, useState } from 'preact/hooks'
import { v4 as uuid } from 'uuid'

// <shop-points shop-key="pk_…" token-url="/loyalty/token"></shop-points>: a signed-in customer's
// points, tier progress and the shop's rewards, with a button to claim each and the code once
// claimed. It asks the shop's own server (token-url, same origin as the page, with its cookies)
// for a customer token, and this service, where the script came from (or the `api` attribute),
// for the rest, with the publishable key. No secret ever reaches the page.
// docs/integrate/storefront.md

interface Props {
  shopKey?: string
  tokenUrl?: string
  api?: string
  /** The shop's page where a friend claims a referral (docs/program/referrals.md); the code is added as ?ref=. Without it, no referral link. */
  referralUrl?: string
  /** The share text; {link} is the referral link. */
  shareText?: string
}

/** The customer's referral link: the shop's page with their code. */
export function referralLink(page: string, code: string): string {
  const url = new URL(page, location.href)
  url.searchParams.set('ref', code)
  return url.toString()
}
const DEFAULT_SHARE = 'Join me at this shop: {link}'

interface Tier {
  points: number
  window_days: number
  next: { name: string; points: number } | null
}
interface Me {
  available: number
  pending: number
  tier: string | null
  tier_progress: Tier | null
  expiring: { points: number; at: string }[]
  birthday: { month: number; day: number } | null
  ways_to_earn: { activities: Activity[]; birthday_points: number }
}
interface Activity {
  action: string
  points: number
  limit: { count: number; per: string } | null
}
interface Reward {
  id: number
  name: string
  points: number
  affordable?: boolean
  claimable?: boolean
}
interface Claim {
  claim_id: string
  reward_name: string
  code: string
  cancelled_at: string | null
}

class Refused extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    detail: string,
  ) {
    super(detail)
  }
}

/** The service this script was loaded from. */
const SERVICE = new URL(import.meta.url).origin

const CSS = `
:host{display:block;font:14px/1.4 system-ui,sans-serif;color:#1d1d1f;max-width:28rem}
.card{border:1px solid #d2d2d7;border-radius:10px;padding:1rem}
h2{font-size:1rem;margin:0 0 .5rem}
.points{font-size:1.6rem;font-weight:600}
.muted{color:#6e6e73;font-size:.85rem}
progress{width:100%;height:.6rem;accent-color:#0071e3}
.tier{margin-bottom:.75rem}
ul{list-style:none;padding:0;margin:.5rem 0 0}
li{display:flex;justify-content:space-between;align-items:center;gap:.5rem;padding:.35rem 0;border-top:1px solid #eee}
button{font:inherit;padding:.25rem .7rem;border-radius:6px;border:1px solid #0071e3;background:#0071e3;color:#fff;cursor:pointer}
button:disabled{background:#e8e8ed;border-color:#d2d2d7;color:#6e6e73;cursor:default}
code{font-weight:600;background:#f5f5f7;padding:.1rem .3rem;border-radius:4px}
.error{color:#b00020}
`

/** What a page's origin is told when the service will not answer it: the fix, not "Failed to fetch". */
function unreachable(service: string, reached: boolean): Refused {
  if (!reached) return new Refused(0, 'unreachable', `the loyalty service at ${service} cannot be reached: check the widget's api attribute or script address`)
  return new Refused(
    0,
    'origin-not-allowed',
    `this page's origin, ${location.origin}, is not one the shop's publishable key allows: add it to the key's origins (a key made with --origin ${location.origin}), then use that key as shop-key`,
  )
}

function storefrontClient({ shopKey, tokenUrl, api }: Props) {
  const service = api || SERVICE
  const base = `${service}/v3/storefront`
  let token: { value: string; until: number } | null = null
  // The token being fetched: every call that needs one meanwhile waits for the same, so a page
  // load asks token-url once, however many calls it makes at once.
  let minting: Promise<string> | null = null

  async function mint(): Promise<string> {
    const res = await fetch(tokenUrl!, { credentials: 'same-origin', headers: { accept: 'application/json' } })
    if (!res.ok) throw new Refused(res.status, 'token-url', 'sign in to see your points')
    const value = ((await res.json()) as { token: string }).token
    // Used until a minute before it would expire (exp), read from the token itself.
    const exp = (JSON.parse(atob(value.split('.')[1]!.replace(/-/g, '+').replace(/_/g, '/'))) as { exp: number }).exp
    token = { value, until: exp * 1000 - 60_000 }
    return value
  }

  /** A live token: the one held unless it is `refused` (the service said it expired), else a new one. */
  function customerToken(refused?: string): Promise<string> {
    if (token && token.value !== refused && token.until > Date.now()) return Promise.resolve(token.value)
    minting ??= mint().finally(() => (minting = null))
    return minting
  }

  /** A fetch that fails outright is a refused origin (CORS hides the answer) or a service out of reach: the script's own address, which any origin may read, tells which. */
  async function reach(url: string, init: RequestInit): Promise<Response> {
    try {
      return await fetch(url, init)
    } catch {
      const reached = await fetch(`${service}/storefront/widget.js`, { method: 'HEAD', cache: 'no-store' }).then(
        () => true,
        () => false,
      )
      throw unreachable(service, reached)
    }
  }

  async function call<T>(method: 'GET' | 'POST' | 'PUT', path: string, headers: Record<string, string> = {}, body?: string, refused?: string): Promise<T> {
    const used = await customerToken(refused)
    const res = await reach(`${base}${path}`, {
      method,
      credentials: 'omit',
      headers: { 'shop-key': shopKey!, authorization: `Bearer ${used}`, ...headers },
      body,
    })
    if (res.ok) return (await res.json()) as T
    const problem = (await res.json().catch(() => ({}))) as { type?: string; detail?: string }
    const type = (problem.type ?? '').replace('/problems/', '')
    if (type === 'token-expired' && refused === undefined) return call(method, path, headers, body, used)
    throw new Refused(res.status, type, problem.detail ?? `the service answered ${res.status}`)
  }
  return { call }
}

/** Where the customer stands: their tier, and how far the next one is, first, as shoppers look for it. */
function TierProgress({ tier, progress }: { tier: string | null; progress: Tier }) {
  const { next } = progress
  const toNext = next === null ? 0 : Math.max(0, next.points - progress.points)
  return (
    <section class="tier" data-tier={tier ?? ''}>
      <h2>{tier ? `Your tier: ${tier}` : 'No tier yet'}</h2>
      {next ? (
        <>
          <progress max={next.points} value={Math.min(progress.points, next.points)} aria-label={`Progress to ${next.name}`} />
          <div>
            <strong data-to-next={toNext}>{toNext} points</strong> to {next.name}
          </div>
          <div class="muted">
            {progress.points} earned in the last {progress.window_days} days
          </div>
        </>
      ) : (
        <div class="muted">
          The top tier: {progress.points} points earned in the last {progress.window_days} days
        </div>
      )}
    </section>
  )
}

/** An action's terms in words: "review: 50 points, up to 2 a month". */
const terms = (a: Activity) =>
  `${a.action.replace(/[_-]/g, ' ')}: ${a.points} points${a.limit ? `, up to ${a.limit.count} ${a.limit.per === 'ever' ? 'in all' : `a ${a.limit.per}`}` : ''}`

const MONTHS = 'Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec'.split(' ')

/** The birthday form: a month and a day, saved with PUT /me/birthday; the service's problem shown as it says it. */
function Birthday({ saved, save }: { saved: Me['birthday']; save: (month: number, day: number) => Promise<void> }) {
  const [month, setMonth] = useState(saved?.month ?? 1)
  const [day, setDay] = useState(saved?.day ?? 1)
  const [error, setError] = useState<string | null>(null)
  const submit = async (e: Event) => {
    e.preventDefault()
    setError(null)
    await save(month, day).catch((err: Error) => setError(err.message))
  }
  const pick = (e: Event) => Number((e.currentTarget as HTMLSelectElement).value)
  return (
    <form class="birthday" onSubmit={submit}>
      {saved && (
        <p data-birthday={`${saved.month}-${saved.day}`}>
          Your birthday: {MONTHS[saved.month - 1]} {saved.day}
        </p>
      )}
      <select name="month" aria-label="Month" value={month} onChange={(e) => setMonth(pick(e))}>
        {MONTHS.map((m, i) => (
          <option value={i + 1}>{m}</option>
        ))}
      </select>{' '}
      <select name="day" aria-label="Day" value={day} onChange={(e) => setDay(pick(e))}>
        {Array.from({ length: 31 }, (_, i) => (
          <option value={i + 1}>{i + 1}</option>
        ))}
      </select>{' '}
      <button type="submit">Save birthday</button>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </form>
  )
}

function ShopPoints(props: Props) {
  const [me, setMe] = useState<Me | null>(null)
  const [rewards, setRewards] = useState<Reward[]>([])
  const [claims, setClaims] = useState<Claim[]>([])
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState<number | null>(null)
  const [referral, setReferral] = useState<string | null>(null)
  const [copied, setCopied] = useState<'copied' | 'failed' | null>(null)
  const [storefront] = useState(() => storefrontClient(props))

  const load = useCallback(async () => {
    if (!props.shopKey || !props.tokenUrl) return setError('<shop-points> needs shop-key and token-url')
    try {
      const [m, r, c] = await Promise.all([
        storefront.call<Me>('GET', '/me'),
        storefront.call<{ rewards: Reward[] }>('GET', '/rewards'),
        storefront.call<{ claims: Claim[] }>('GET', '/me/claims?limit=5'),
      ])
      setMe(m)
      setRewards(r.rewards)
      setClaims(c.claims)
      setError(null)
      if (props.referralUrl) {
        // No code while the shop offers no referrals: no link to share that would lead nowhere.
        const { code } = await storefront.call<{ code: string | null }>('GET', '/me/referral')
        setReferral(code === null ? null : referralLink(props.referralUrl, code))
      }
    } catch (err) {
      setError((err as Error).message)
    }
  }, [props.shopKey, props.tokenUrl, props.referralUrl])

  useEffect(() => void load(), [load])

  const claim = async (reward: Reward) => {
    setBusy(reward.id)
    try {
      // uuid: crypto.randomUUID where there is one, else from crypto.getRandomValues, which a plain-http page has too.
      await storefront.call<Claim>('POST', `/rewards/${reward.id}/claim`, { 'idempotency-key': uuid() })
      await load()
    } catch (err) {
      setError((err as Error).message)
    } finally {
      setBusy(null)
    }
  }

  const saveBirthday = async (month: number, day: number) => {
    await storefront.call('PUT', '/me/birthday', { 'content-type': 'application/json' }, JSON.stringify({ month, day }))
    await load()
  }

  const ways = me?.ways_to_earn
  const shareText = referral === null ? '' : (props.shareText || DEFAULT_SHARE).replace('{link}', referral)
  const share = async () => {
    // The system's share sheet where there is one, else the text copied: clipboard-copy uses
    // navigator.clipboard where the page is a secure context, else the copy command, which a
    // plain-http page has too. Where neither may copy, the customer copies the text shown.
    if (navigator.share) await navigator.share({ text: shareText }).catch(() => undefined)
    else
      await copy(shareText).then(
        () => setCopied('copied'),
        () => setCopied('failed'),
      )
  }

  const progress = me?.tier_progress
  return (
    <div class="card" part="card">
      <style>{CSS}</style>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {me && progress && <TierProgress tier={me.tier} progress={progress} />}
      {me && (
        <section>
          <h2>Your points</h2>
          <div class="points" data-available={me.available}>
            {me.available}
          </div>
          {me.pending > 0 && <div class="muted">{me.pending} pending</div>}
          {me.expiring[0] && (
            <div class="muted">
              {me.expiring[0].points} expire on {me.expiring[0].at.slice(0, 10)}
            </div>
          )}
        </section>
      )}
      {me && (
        <section>
          <h2>Rewards</h2>
          <ul class="rewards">
            {rewards.map((r) => (
              <li data-reward={r.id}>
                <span>
                  {r.name} <span class="muted">{r.points} points</span>
                </span>
                <button type="button" disabled={!r.claimable || busy !== null} onClick={() => claim(r)}>
                  {busy === r.id ? 'Claiming…' : 'Claim'}
                </button>
              </li>
            ))}
          </ul>
        </section>
      )}
      {ways && (ways.activities.length > 0 || ways.birthday_points > 0) && (
        <section class="ways">
          <h2>Ways to earn</h2>
          <ul class="activities">
            {ways.activities.map((a) => (
              <li data-action={a.action}>{terms(a)}</li>
            ))}
            {ways.birthday_points > 0 && <li data-action="birthday">birthday: {ways.birthday_points} points a year</li>}
          </ul>
          {ways.birthday_points > 0 && <Birthday saved={me.birthday} save={saveBirthday} />}
        </section>
      )}
      {referral && (
        <section class="referral">
          <h2>Refer a friend</h2>
          <p class="share-text" data-link={referral}>
            {shareText}
          </p>
          <button type="button" onClick={share}>
            {copied === 'copied' ? 'Copied' : 'Share'}
          </button>
          {copied === 'failed' && <p class="muted">Select the text above and copy it to share it.</p>}
        </section>
      )}
      {claims.length > 0 && (
        <section>
          <h2>Your codes</h2>
          <ul class="claims">
            {claims
              .filter((c) => c.cancelled_at === null)
              .map((c) => (
                <li data-claim={c.claim_id}>
                  <span>{c.reward_name}</span>
                  <code>{c.code}</code>
                </li>
              ))}
          </ul>
        </section>
      )}
    </div>
  )
}

// The attributes as written in the page; preact-custom-element hands them over camel-cased (shopKey, tokenUrl).
register(ShopPoints, 'shop-points', ['shop-key', 'token-url', 'api', 'referral-url', 'share-text'] as never, { shadow: true })
