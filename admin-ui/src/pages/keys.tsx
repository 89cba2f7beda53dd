import { useState } from 'preact/hooks'
import { api, enc, type NewKey } from '../api.ts'
import { ErrorBox, ShopPicker, defaultShop } from '../components/common.tsx'
import { useData } from '../hooks/use-data.ts'
import { time } from '../format.ts'
import { navigate, route } from '../router.ts'
import { canChange } from '../session.ts'

type Created = NewKey

function NewKey({ created, onClose }: { created: Created; onClose: () => void }) {
  const [copied, setCopied] = useState<'no' | 'yes' | 'failed'>('no')
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(created.key)
      setCopied('yes')
    } catch {
      setCopied('failed')
    }
  }
  return (
    <div class="notice new-key" role="status">
      <p>
        <strong>The new key, shown this once.</strong> Give it to the shop's integration now: it cannot be shown again.
      </p>
      <div class="secret">
        <input readOnly name="new-key" value={created.key} onFocus={(e) => (e.currentTarget as HTMLInputElement).select()} />
        <button type="button" onClick={copy}>
          {copied === 'yes' ? 'Copied' : 'Copy'}
        </button>
        <button type="button" onClick={onClose}>
          Done
        </button>
      </div>
      {copied === 'failed' && <p class="muted">The browser refused the clipboard: select the key and copy it.</p>}
    </div>
  )
}

export function Keys() {
  const shop = route.value.params.get('shop') ?? defaultShop()
  const [created, setCreated] = useState<Created | null>(null)
  const [confirming, setConfirming] = useState<number | null>(null)
  const [error, setError] = useState<unknown>(null)
  // A list loaded clears the last action's refusal, as it replaces what was refused.
  const loaded = useData(
    shop ? () => api('GET', '/v3/admin/shops/{shop}/keys', { params: { shop }, query: { limit: 500 } }).then((page) => page.items) : null,
    [shop],
    {
      onLoad: () => setError(null),
    },
  )
  const keys = loaded.data
  const create = async () => {
    setError(null)
    try {
      setCreated(await api('POST', '/v3/admin/shops/{shop}/keys', { params: { shop } }))
      loaded.refresh()
    } catch (err) {
      setError(err)
    }
  }
  const revoke = async (id: number) => {
    setError(null)
    try {
      await api('POST', '/v3/admin/shops/{shop}/keys/{id}/revoke', { params: { shop, id } })
      setConfirming(null)
      loaded.refresh()
    } catch (err) {
      setError(err)
    }
  }
  return (
    <main>
      <div class="toolbar">
        <h1>Keys</h1>
        <ShopPicker value={shop} onChange={(s) => (setCreated(null), navigate(`keys?shop=${enc(s)}`))} />
        {canChange.value && (
          <button type="button" class="primary" name="create-key" disabled={!shop} onClick={create}>
            Create a key
          </button>
        )}
      </div>
      {created && <NewKey created={created} onClose={() => setCreated(null)} />}
      <ErrorBox error={error ?? loaded.error} />
      {keys && (
        <table class="keys">
          <thead>
            <tr>
              <th>id</th>
              <th>key</th>
              <th>kind</th>
              <th>origins</th>
              <th>created</th>
              <th>last used</th>
              <th>revoked</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {keys.map((k) => (
              <tr data-key-id={k.id} class={k.revoked_at ? 'revoked' : ''}>
                <td>{k.id}</td>
                <td>
                  <code>{k.hint}</code>
                </td>
                <td data-kind={k.kind}>{k.kind}</td>
                <td>{k.origins.join(' ')}</td>
                <td>{time(k.created_at)}</td>
                <td>{time(k.last_used_at)}</td>
                <td>{k.revoked_at ? time(k.revoked_at) : ''}</td>
                <td>
                  {!k.revoked_at &&
                    canChange.value &&
                    (confirming === k.id ? (
                      <span class="confirm">
                        Revoke this key? Its shop's webhooks with it are refused within a second.{' '}
                        <button type="button" class="danger" name="confirm-revoke" onClick={() => revoke(k.id)}>
                          Revoke
                        </button>{' '}
                        <button type="button" onClick={() => setConfirming(null)}>
                          Cancel
                        </button>
                      </span>
                    ) : (
                      <button type="button" name="revoke" onClick={() => setConfirming(k.id)}>
                        Revoke…
                      </button>
                    ))}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </main>
  )
}
