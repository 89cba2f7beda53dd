import { useState } from 'preact/hooks'
import { api } from '../api.ts'
import { useData } from '../hooks/use-data.ts'
import { ErrorBox } from './common.tsx'

// A customer's birthday on their page (docs/program/birthdays.md): shown, and set by an operator
// (audited as birthday.set). Set on the day itself, it pays the rule's birthday points at once.

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December']

export function BirthdayForm({ shop, id, changeable, onDone }: { shop: string; id: number; changeable: boolean; onDone: () => void }) {
  const { data, error: loadError, refresh } = useData(() => api('GET', '/v3/admin/shops/{shop}/customers/{id}/birthday', { params: { shop, id } }), [shop, id])
  const [month, setMonth] = useState('')
  const [day, setDay] = useState('')
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)
  const [paid, setPaid] = useState<number | null>(null)
  const submit = async (e: Event) => {
    e.preventDefault()
    setBusy(true)
    setError(null)
    try {
      const set = await api('PUT', '/v3/admin/shops/{shop}/customers/{id}/birthday', { params: { shop, id }, body: { month: Number(month), day: Number(day) } })
      setPaid(set.points_paid)
      refresh()
      onDone()
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  if (loadError) return <ErrorBox error={loadError} />
  const shown = data ? `${MONTHS[data.month - 1]} ${data.day}` : data === null ? 'not set' : '…'
  return (
    <form class="birthday" onSubmit={submit}>
      <h2>Birthday</h2>
      <span data-birthday>{shown}</span>
      {changeable && (
        <>
          <label>
            Month{' '}
            <select name="birthday_month" value={month} onChange={(e) => setMonth((e.currentTarget as HTMLSelectElement).value)}>
              <option value="">…</option>
              {MONTHS.map((name, i) => (
                <option value={String(i + 1)}>{name}</option>
              ))}
            </select>
          </label>
          <label>
            Day <input name="birthday_day" inputMode="numeric" size={3} value={day} onInput={(e) => setDay((e.currentTarget as HTMLInputElement).value)} />
          </label>
          <button type="submit" name="set-birthday" disabled={busy || month === '' || !/^[1-9][0-9]?$/.test(day.trim())}>
            Set birthday
          </button>
          {paid !== null && paid > 0 && <span class="muted"> paid {paid} birthday points</span>}
        </>
      )}
      <ErrorBox error={error} labels={{ '/month': 'Month', '/day': 'Day' }} />
    </form>
  )
}
