import { useState } from 'preact/hooks'
import { api, enc, type CodesAdded, type RewardBody, type RewardView } from '../api.ts'
import { defaultShop, ErrorBox, ShopPicker } from '../components/common.tsx'
import { time } from '../format.ts'
import { useData } from '../hooks/use-data.ts'
import { link, navigate, route } from '../router.ts'
import { canChange } from '../session.ts'

// A shop's rewards (docs/program/rewards.md): the catalogue with each pool's codes left, the latest
// claims, and for an operator a reward added, codes uploaded to a pool, a reward removed.

const KINDS = ['fixed_amount', 'percentage', 'free_shipping', 'custom'] as const
type Kind = (typeof KINDS)[number]

/** What a reward is, in words: "5.00 EUR off", "10 % off", "free shipping". */
function what(r: RewardView): string {
  if (r.kind === 'fixed_amount') return `${String(r.value)} ${r.currency ?? ''} off`
  if (r.kind === 'percentage') return `${String(r.value)} % off`
  if (r.kind === 'free_shipping') return 'free shipping'
  return 'custom'
}

function NewReward({ shop, onAdded }: { shop: string; onAdded: () => void }) {
  const [name, setName] = useState('')
  const [points, setPoints] = useState('')
  const [kind, setKind] = useState<Kind>('fixed_amount')
  const [value, setValue] = useState('')
  const [currency, setCurrency] = useState('EUR')
  const [codes, setCodes] = useState<'generated' | 'pool'>('generated')
  const [prefix, setPrefix] = useState('')
  const [error, setError] = useState<unknown>(null)
  const submit = async (e: Event) => {
    e.preventDefault()
    setError(null)
    const body: Record<string, unknown> = { name, points: /^\d+$/.test(points) ? Number(points) : points, kind, codes }
    if (kind === 'fixed_amount') Object.assign(body, { value, currency })
    if (kind === 'percentage') body.value = /^\d+$/.test(value) ? Number(value) : value
    if (codes === 'generated' && prefix !== '') body.code_prefix = prefix
    try {
      await api('POST', '/v3/admin/shops/{shop}/rewards', { params: { shop }, body: body as RewardBody })
      setName('')
      setPoints('')
      setValue('')
      setPrefix('')
      onAdded()
    } catch (err) {
      setError(err)
    }
  }
  return (
    <form class="new-reward" onSubmit={submit}>
      <h2>Add a reward</h2>
      <label>
        Name <input name="reward-name" value={name} onInput={(e) => setName(e.currentTarget.value)} required />
      </label>
      <label>
        Points <input name="reward-points" inputMode="numeric" value={points} onInput={(e) => setPoints(e.currentTarget.value)} required />
      </label>
      <label>
        Kind{' '}
        <select name="reward-kind" value={kind} onChange={(e) => setKind(e.currentTarget.value as Kind)}>
          {KINDS.map((k) => (
            <option value={k}>{k.replace('_', ' ')}</option>
          ))}
        </select>
      </label>
      {(kind === 'fixed_amount' || kind === 'percentage') && (
        <label>
          {kind === 'fixed_amount' ? 'Amount' : 'Percent'}{' '}
          <input name="reward-value" placeholder={kind === 'fixed_amount' ? '5.00' : '10'} value={value} onInput={(e) => setValue(e.currentTarget.value)} />
        </label>
      )}
      {kind === 'fixed_amount' && (
        <label>
          Currency <input name="reward-currency" size={4} value={currency} onInput={(e) => setCurrency(e.currentTarget.value)} />
        </label>
      )}
      <label>
        Codes{' '}
        <select name="reward-codes" value={codes} onChange={(e) => setCodes(e.currentTarget.value as 'generated' | 'pool')}>
          <option value="generated">generated</option>
          <option value="pool">from a pool</option>
        </select>
      </label>
      {codes === 'generated' && (
        <label>
          Prefix <input name="reward-prefix" placeholder="SAVE-" value={prefix} onInput={(e) => setPrefix(e.currentTarget.value)} />
        </label>
      )}
      <button type="submit" class="primary" name="add-reward">
        Add
      </button>
      <ErrorBox error={error} />
    </form>
  )
}

function Upload({ shop, reward, onDone }: { shop: string; reward: RewardView; onDone: () => void }) {
  const [text, setText] = useState('')
  const [result, setResult] = useState<CodesAdded | null>(null)
  const [error, setError] = useState<unknown>(null)
  const upload = async () => {
    setError(null)
    const codes = text
      .split(/\r?\n/)
      .map((c) => c.trim())
      .filter((c) => c !== '')
    try {
      setResult(await api('POST', '/v3/admin/shops/{shop}/rewards/{id}/codes', { params: { shop, id: reward.id }, body: { codes } }))
      setText('')
      onDone()
    } catch (err) {
      setError(err)
    }
  }
  return (
    <div class="upload" data-upload={reward.id}>
      <textarea name="codes" rows={4} placeholder="one code a line" value={text} onInput={(e) => setText(e.currentTarget.value)} />
      <button type="button" name="upload-codes" onClick={upload}>
        Upload codes
      </button>
      {result && (
        <p class="muted" data-uploaded>
          {result.added} added, {result.duplicates} duplicates left out
          {result.handed_out > 0 && ` (${result.handed_out} handed out by claims already, never handed out again)`}; {result.codes_left} left
        </p>
      )}
      <ErrorBox error={error} />
    </div>
  )
}

export function Rewards() {
  const shop = route.value.params.get('shop') ?? defaultShop()
  const [uploading, setUploading] = useState<number | null>(null)
  const [confirming, setConfirming] = useState<number | null>(null)
  const [error, setError] = useState<unknown>(null)
  // A list loaded clears the last action's refusal, as it replaces what was refused.
  const loaded = useData(
    shop
      ? () =>
          Promise.all([
            api('GET', '/v3/admin/shops/{shop}/rewards', { params: { shop } }),
            api('GET', '/v3/admin/shops/{shop}/claims', { params: { shop }, query: { limit: 20 } }),
          ])
      : null,
    [shop],
    { onLoad: () => setError(null) },
  )
  const rewards = loaded.data?.[0].items
  const claims = loaded.data?.[1].items
  const refresh = loaded.refresh
  const remove = async (id: number) => {
    setError(null)
    try {
      await api('DELETE', '/v3/admin/shops/{shop}/rewards/{id}', { params: { shop, id } })
      setConfirming(null)
      refresh()
    } catch (err) {
      setError(err)
    }
  }
  return (
    <main>
      <div class="toolbar">
        <h1>Rewards</h1>
        <ShopPicker value={shop} onChange={(s) => navigate(`rewards?shop=${enc(s)}`)} />
      </div>
      <ErrorBox error={error ?? loaded.error} />
      {rewards && rewards.length === 0 && <p class="muted">This shop has no rewards yet.</p>}
      {rewards && rewards.length > 0 && (
        <table class="rewards">
          <thead>
            <tr>
              <th>id</th>
              <th>name</th>
              <th>points</th>
              <th>what</th>
              <th>codes</th>
              <th>codes left</th>
              <th>min tier</th>
              <th>active</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {rewards.map((r) => (
              <tr data-reward-id={r.id} class={r.active ? '' : 'inactive'}>
                <td>{r.id}</td>
                <td>{r.name}</td>
                <td>{r.points}</td>
                <td>{what(r)}</td>
                <td>{r.codes === 'pool' ? 'pool' : `generated${r.code_prefix ? ` (${r.code_prefix}…)` : ''}`}</td>
                <td data-codes-left>{r.codes_left === null ? '—' : r.codes_left}</td>
                <td>{r.min_tier ?? '—'}</td>
                <td>{r.active ? 'yes' : 'no'}</td>
                <td>
                  {canChange.value && r.active && r.codes === 'pool' && (
                    <button type="button" name="show-upload" onClick={() => setUploading(uploading === r.id ? null : r.id)}>
                      Codes…
                    </button>
                  )}{' '}
                  {canChange.value &&
                    r.active &&
                    (confirming === r.id ? (
                      <span class="confirm">
                        Remove it? No claim takes it from now on; its claims are kept.{' '}
                        <button type="button" class="danger" name="confirm-remove" onClick={() => remove(r.id)}>
                          Remove
                        </button>{' '}
                        <button type="button" onClick={() => setConfirming(null)}>
                          Cancel
                        </button>
                      </span>
                    ) : (
                      <button type="button" name="remove" onClick={() => setConfirming(r.id)}>
                        Remove…
                      </button>
                    ))}
                  {uploading === r.id && <Upload shop={shop} reward={r} onDone={refresh} />}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {canChange.value && shop && <NewReward shop={shop} onAdded={refresh} />}
      <h2>Latest claims</h2>
      {claims && claims.length === 0 && <p class="muted">No claims yet.</p>}
      {claims && claims.length > 0 && (
        <table class="claims">
          <thead>
            <tr>
              <th>claimed</th>
              <th>customer</th>
              <th>reward</th>
              <th>points</th>
              <th>code</th>
              <th>cancelled</th>
            </tr>
          </thead>
          <tbody>
            {claims.map((c) => (
              <tr data-claim-id={c.claim_id} class={c.cancelled_at ? 'cancelled' : ''}>
                <td>{time(c.created_at)}</td>
                <td>
                  <a {...link(`customer?shop=${enc(shop)}&q=${c.customer_id}`)}>{c.customer_id}</a>
                </td>
                <td>{c.reward_name}</td>
                <td>{c.points}</td>
                <td>
                  <code>{c.code}</code>
                </td>
                <td>{c.cancelled_at ? time(c.cancelled_at) : ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </main>
  )
}
