import register from 'preact-custom-element'
import { useCallback, useEffect, useState } from 'preact/hooks'

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
}

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
progress{width:100%}
ul{list-style:none;padding:0;margin:.5rem 0 0}
li{display:flex;justify-content:space-between;align-items:center;gap:.5rem;padding:.35rem 0;border-top:1px solid #eee}
button{font:inherit;padding:.25rem .7rem;border-radius:6px;border:1px solid #0071e3;background:#0071e3;color:#fff;cursor:pointer}
button:disabled{background:#e8e8ed;border-color:#d2d2d7;color:#6e6e73;cursor:default}
code{font-weight:600;background:#f5f5f7;padding:.1rem .3rem;border-radius:4px}
.error{color:#b00020}
`

function storefrontClient({ shopKey, tokenUrl, api }: Props) {
  const base = `${api || SERVICE}/v3/storefront`
  let token: { value: string; until: number } | null = null

  async function customerToken(fresh = false): Promise<string> {
    if (!fresh && token && token.until > Date.now()) return token.value
    const res = await fetch(tokenUrl!, { credentials: 'same-origin', headers: { accept: 'application/json' } })
    if (!res.ok) throw new Refused(res.status, 'token-url', 'sign in to see your points')
    const value = ((await res.json()) as { token: string }).token
    // Used until a minute before it would expire (exp), read from the token itself.
    const exp = (JSON.parse(atob(value.split('.')[1]!.replace(/-/g, '+').replace(/_/g, '/'))) as { exp: number }).exp
    token = { value, until: exp * 1000 - 60_000 }
    return value
  }

  async function call<T>(method: 'GET' | 'POST', path: string, headers: Record<string, string> = {}, retried = false): Promise<T> {
    const res = await fetch(`${base}${path}`, {
      method,
      credentials: 'omit',
      headers: { 'shop-key': shopKey!, authorization: `Bearer ${await customerToken(retried)}`, ...headers },
    })
    if (res.ok) return (await res.json()) as T
    const problem = (await res.json().catch(() => ({}))) as { type?: string; detail?: string }
    const type = (problem.type ?? '').replace('/problems/', '')
    if (type === 'token-expired' && !retried) return call(method, path, headers, true)
    throw new Refused(res.status, type, problem.detail ?? `the service answered ${res.status}`)
  }
  return { call }
}

function ShopPoints(props: Props) {
  const [me, setMe] = useState<Me | null>(null)
  const [rewards, setRewards] = useState<Reward[]>([])
  const [claims, setClaims] = useState<Claim[]>([])
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState<number | null>(null)
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
    } catch (err) {
      setError((err as Error).message)
    }
  }, [props.shopKey, props.tokenUrl])

  useEffect(() => void load(), [load])

  const claim = async (reward: Reward) => {
    setBusy(reward.id)
    try {
      await storefront.call<Claim>('POST', `/rewards/${reward.id}/claim`, { 'idempotency-key': crypto.randomUUID() })
      await load()
    } catch (err) {
      setError((err as Error).message)
    } finally {
      setBusy(null)
    }
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
          {progress && (
            <div class="tier" data-tier={me.tier ?? ''}>
              <div>
                {me.tier ?? 'No tier yet'}
                {progress.next && ` · ${Math.max(0, progress.next.points - progress.points)} to ${progress.next.name}`}
              </div>
              {progress.next && <progress max={progress.next.points} value={Math.min(progress.points, progress.next.points)} />}
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
register(ShopPoints, 'shop-points', ['shop-key', 'token-url', 'api'] as never, { shadow: true })
