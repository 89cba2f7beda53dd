import { useEffect, useState } from 'preact/hooks'
import { api, type AuditEntry } from '../api.ts'
import { ErrorBox } from '../components/common.tsx'
import { time } from '../format.ts'
import { AuditWhat } from '../components/audit-what.tsx'

export function Audit() {
  const [items, setItems] = useState<AuditEntry[]>([])
  const [cursor, setCursor] = useState<string | null>(null)
  const [error, setError] = useState<unknown>(null)
  const load = async (after: string | null) => {
    try {
      const page = await api('GET', '/v3/admin/audit', { query: { limit: 100, cursor: after } })
      setItems((old) => (after ? [...old, ...page.items] : page.items))
      setCursor(page.next_cursor)
      setError(null)
    } catch (err) {
      setError(err)
    }
  }
  useEffect(() => {
    void load(null)
  }, [])
  return (
    <main>
      <div class="toolbar">
        <h1>Audit</h1>
        <button type="button" onClick={() => load(null)}>
          Refresh
        </button>
      </div>
      <ErrorBox error={error} />
      <table class="audit">
        <thead>
          <tr>
            <th>when</th>
            <th>who</th>
            <th>shop</th>
            <th>what</th>
          </tr>
        </thead>
        <tbody>
          {items.map((a) => (
            <tr data-action={a.action}>
              <td>{time(a.created_at)}</td>
              <td>{a.operator}</td>
              <td>{a.shop ?? ''}</td>
              <td>
                <AuditWhat entry={a} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {cursor && (
        <button type="button" onClick={() => load(cursor)}>
          Load more
        </button>
      )}
    </main>
  )
}
