import { useState } from 'preact/hooks'
import { api, enc, type SubscriptionView } from '../api.ts'
import { defaultShop, ErrorBox, ShopPicker } from '../components/common.tsx'
import { time } from '../format.ts'
import { useData } from '../hooks/use-data.ts'
import { navigate, route } from '../router.ts'
import { canChange } from '../session.ts'

// A shop's outgoing webhook subscriptions: subscribe (the secret shown once), each one's status
// and latest deliveries (status, attempts, last error), replay from a position, rotate, remove.
// Klaviyo destinations (docs/integrate/klaviyo.md) are listed too, their private key masked as the
// API shows it; they are subscribed from the API or the command line, where the key is given
// (no secret is needed in a browser), and have no signing secret to rotate.

function Secret({ secret, what, onClose }: { secret: string; what: string; onClose: () => void }) {
  return (
    <div class="notice new-key" role="status">
      <p>
        <strong>{what}, shown this once.</strong> Give it to the endpoint's owner now: it cannot be shown again.
      </p>
      <div class="secret">
        <input readOnly name="new-secret" value={secret} onFocus={(e) => (e.currentTarget as HTMLInputElement).select()} />
        <button type="button" onClick={onClose}>
          Done
        </button>
      </div>
    </div>
  )
}

function Deliveries({ shop, sub, onChanged }: { shop: string; sub: SubscriptionView; onChanged: () => void }) {
  const [after, setAfter] = useState(String(sub.position))
  const [error, setError] = useState<unknown>(null)
  const params = { shop, id: sub.id }
  const loaded = useData(() => api('GET', '/v3/admin/shops/{shop}/subscriptions/{id}', { params }), [shop, sub.id, sub.position, sub.attempts])
  const detail = loaded.data
  const replay = async () => {
    setError(null)
    try {
      await api('POST', '/v3/admin/shops/{shop}/subscriptions/{id}/replay', { params, body: { after: Number(after) } })
      onChanged()
    } catch (err) {
      setError(err)
    }
  }
  return (
    <div class="deliveries" data-deliveries={sub.id}>
      <ErrorBox error={error ?? loaded.error} labels={LABELS} />
      {canChange.value && (
        <form
          class="replay"
          onSubmit={(e) => {
            e.preventDefault()
            void replay()
          }}
        >
          <label>
            Deliver again every entry after position{' '}
            <input name="replay-after" inputMode="numeric" value={after} onInput={(e) => setAfter((e.currentTarget as HTMLInputElement).value)} />
          </label>{' '}
          <button type="submit" name="replay">
            Replay
          </button>
        </form>
      )}
      {detail && detail.deliveries.length === 0 && <p class="muted">Nothing delivered yet.</p>}
      {detail && detail.deliveries.length > 0 && (
        <table>
          <thead>
            <tr>
              <th>position</th>
              <th>type</th>
              <th>status</th>
              <th>attempts</th>
              <th>answer</th>
              <th>last error</th>
              <th>at</th>
            </tr>
          </thead>
          <tbody>
            {detail.deliveries.map((d) => (
              <tr data-delivery={d.position} class={d.status}>
                <td>{d.position}</td>
                <td>{d.type}</td>
                <td>{d.status}</td>
                <td>{d.attempts}</td>
                <td>{d.response_status ?? ''}</td>
                <td>{d.last_error ?? ''}</td>
                <td>{time(d.updated_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  )
}

/** The form's fields by the pointers of the admin API's errors. */
const LABELS = { '/url': 'Endpoint', '/types': 'Types', '/after': 'Replay after position' }

export function Subscriptions() {
  const shop = route.value.params.get('shop') ?? defaultShop()
  const [secret, setSecret] = useState<{ value: string; what: string } | null>(null)
  const [open, setOpen] = useState<number | null>(null)
  const [url, setUrl] = useState('')
  const [types, setTypes] = useState('points.*, customer.deleted')
  const [error, setError] = useState<unknown>(null)
  /** The subscription whose Remove or Rotate asks to be confirmed. */
  const [confirming, setConfirming] = useState<{ id: number; action: 'remove' | 'rotate' } | null>(null)
  // A list loaded clears the last action's refusal, as it replaces what was refused.
  const loaded = useData(shop ? () => api('GET', '/v3/admin/shops/{shop}/subscriptions', { params: { shop } }).then((list) => list.items) : null, [shop], {
    onLoad: () => setError(null),
  })
  const subs = loaded.data
  const act = async (work: () => Promise<void>) => {
    setError(null)
    setConfirming(null)
    try {
      await work()
      loaded.refresh()
    } catch (err) {
      setError(err)
    }
  }
  const subscribe = () =>
    act(async () => {
      const made = await api('POST', '/v3/admin/shops/{shop}/subscriptions', { params: { shop }, body: { url, types: types.split(',').map((t) => t.trim()) } })
      if ('secret' in made) setSecret({ value: made.secret, what: `The signing secret of subscription ${made.id}` })
      setUrl('')
    })
  return (
    <main>
      <div class="toolbar">
        <h1>Outgoing webhooks</h1>
        <ShopPicker value={shop} onChange={(s) => (setSecret(null), navigate(`subscriptions?shop=${enc(s)}`))} />
      </div>
      {secret && <Secret secret={secret.value} what={secret.what} onClose={() => setSecret(null)} />}
      <ErrorBox error={error ?? loaded.error} labels={LABELS} />
      {canChange.value && shop && (
        <form
          class="subscribe"
          onSubmit={(e) => {
            e.preventDefault()
            void subscribe()
          }}
        >
          <label>
            Endpoint{' '}
            <input
              name="url"
              type="url"
              required
              placeholder="https://crm.example.com/hooks"
              value={url}
              onInput={(e) => setUrl((e.currentTarget as HTMLInputElement).value)}
            />
          </label>{' '}
          <label>
            Types <input name="types" value={types} onInput={(e) => setTypes((e.currentTarget as HTMLInputElement).value)} />
          </label>{' '}
          <button type="submit" class="primary" name="subscribe">
            Subscribe
          </button>
        </form>
      )}
      {subs && subs.length === 0 && <p class="muted">No subscriptions for this shop.</p>}
      {subs && subs.length > 0 && (
        <table class="subscriptions">
          <thead>
            <tr>
              <th>id</th>
              <th>endpoint</th>
              <th>types</th>
              <th>status</th>
              <th>position</th>
              <th>last error</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {subs.map((s) => [
              <tr data-subscription={s.id} class={s.status}>
                <td>{s.id}</td>
                <td class="url">
                  {s.klaviyo ? (
                    <span data-klaviyo-key={s.klaviyo.private_key}>
                      Klaviyo, key <code>{s.klaviyo.private_key}</code>
                      {s.klaviyo.referral_url && (
                        <>
                          {' '}
                          (referral links to <code>{s.klaviyo.referral_url}</code>)
                        </>
                      )}
                    </span>
                  ) : (
                    <code title={s.url}>{s.url}</code>
                  )}
                </td>
                <td>{s.types.join(', ')}</td>
                <td>
                  <span class={`badge ${s.status}`} data-status={s.status}>
                    {s.status}
                  </span>
                  {s.next_attempt_at && <span class="muted"> next {time(s.next_attempt_at)}</span>}
                  {s.previous_secret_until && <span class="muted"> previous secret until {time(s.previous_secret_until)}</span>}
                </td>
                <td>{s.position}</td>
                <td>{s.last_error ?? ''}</td>
                <td>
                  <button type="button" name="deliveries" onClick={() => setOpen(open === s.id ? null : s.id)}>
                    {open === s.id ? 'Hide' : 'Deliveries'}
                  </button>{' '}
                  {canChange.value &&
                    (confirming?.id === s.id ? (
                      <span class="confirm" data-confirm={confirming.action}>
                        {confirming.action === 'remove'
                          ? 'Remove this subscription? Nothing more is sent to it, and its deliveries are forgotten.'
                          : `Rotate its secret? The endpoint must switch to the new one within the grace (the previous one signs too until then).`}{' '}
                        <button
                          type="button"
                          class="danger"
                          name={`confirm-${confirming.action}`}
                          onClick={() =>
                            confirming.action === 'remove'
                              ? act(() => api('DELETE', '/v3/admin/shops/{shop}/subscriptions/{id}', { params: { shop, id: s.id } }).then(() => {}))
                              : act(async () => {
                                  const r = await api('POST', '/v3/admin/shops/{shop}/subscriptions/{id}/rotate', { params: { shop, id: s.id } })
                                  setSecret({ value: r.secret, what: `The new signing secret of subscription ${s.id}` })
                                })
                          }
                        >
                          {confirming.action === 'remove' ? 'Remove' : 'Rotate'}
                        </button>{' '}
                        <button type="button" onClick={() => setConfirming(null)}>
                          Cancel
                        </button>
                      </span>
                    ) : (
                      <>
                        {s.destination === 'webhook' && (
                          <>
                            <button type="button" name="rotate" onClick={() => setConfirming({ id: s.id, action: 'rotate' })}>
                              Rotate secret…
                            </button>{' '}
                          </>
                        )}
                        <button type="button" class="danger" name="remove" onClick={() => setConfirming({ id: s.id, action: 'remove' })}>
                          Remove…
                        </button>
                      </>
                    ))}
                </td>
              </tr>,
              open === s.id && (
                <tr>
                  <td colSpan={7}>
                    <Deliveries shop={shop} sub={s} onChanged={loaded.refresh} />
                  </td>
                </tr>
              ),
            ])}
          </tbody>
        </table>
      )}
    </main>
  )
}
