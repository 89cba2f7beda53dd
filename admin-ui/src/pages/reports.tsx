import { useEffect, useState } from 'preact/hooks'
import { api, ApiError, enc, query, type PointsReport } from '../api.ts'
import { ErrorBox, ShopPicker, defaultShop } from '../components/common.tsx'
import { OutstandingChart } from '../components/outstanding-chart.tsx'
import { UnfinishedImports } from '../components/unfinished-imports.tsx'
import { useData } from '../hooks/use-data.ts'
import { navigate, route } from '../router.ts'

// The points liability report (GET /v3/admin/shops/{shop}/points-report): the chart of what is
// outstanding, the table of flows per bucket, and the same as a CSV download. The form is the
// page's query, so a report can be bookmarked. Points imports left unfinished are named above
// it: their balances are not all in the report yet.

const FLOWS = ['earned', 'reversed', 'redeemed', 'given_back', 'expired', 'adjusted'] as const
const BALANCES = ['outstanding', 'available', 'pending'] as const

export function Reports() {
  const params = route.value.params
  const shop = params.get('shop') ?? defaultShop()
  const asked = { from: params.get('from') ?? '', to: params.get('to') ?? '', bucket: params.get('bucket') ?? 'day' }
  const [form, setForm] = useState(asked)
  const [csvError, setCsvError] = useState<unknown>(null)
  const key = `${shop}?${query(asked)}`
  useEffect(() => setForm(asked), [key])
  const loaded = useData(
    shop
      ? () => api('GET', '/v3/admin/shops/{shop}/points-report', { params: { shop }, query: { from: asked.from, to: asked.to, bucket: asked.bucket } })
      : null,
    [key],
    {
      onLoad: (r) => {
        setCsvError(null)
        // The range shown, in the fields: the default one when none was asked.
        setForm({ from: asked.from || r.from, to: asked.to || r.to, bucket: asked.bucket })
      },
    },
  )
  // A failed load shows its error, not the report before it.
  const report = loaded.error ? undefined : loaded.data
  const error = csvError ?? loaded.error
  const go = (next: Partial<typeof asked> & { shop?: string }) => navigate(`reports${query({ shop, ...form, ...next })}`)
  return (
    <main>
      <div class="toolbar">
        <h1>Points liability</h1>
        <ShopPicker value={shop} onChange={(s) => go({ shop: s })} />
      </div>
      <UnfinishedImports shop={shop} />
      <form
        class="report-form"
        onSubmit={(e) => {
          e.preventDefault()
          go({})
        }}
      >
        <label>
          From <input name="from" type="date" value={form.from} onInput={(e) => setForm({ ...form, from: (e.currentTarget as HTMLInputElement).value })} />
        </label>
        <label>
          To <input name="to" type="date" value={form.to} onInput={(e) => setForm({ ...form, to: (e.currentTarget as HTMLInputElement).value })} />
        </label>
        <label>
          By{' '}
          <select name="bucket" value={form.bucket} onChange={(e) => setForm({ ...form, bucket: (e.currentTarget as HTMLSelectElement).value })}>
            <option value="day">day</option>
            <option value="week">ISO week</option>
            <option value="month">month</option>
          </select>
        </label>
        <button type="submit">Show</button>
        {report && (
          <button type="button" name="csv" onClick={() => download(shop, report).then(() => setCsvError(null), setCsvError)}>
            Download CSV
          </button>
        )}
      </form>
      <ErrorBox error={error} />
      {report && (
        <>
          <p class="muted">
            {report.from} to {report.to} by {report.bucket}, the days of {report.time_zone}. Outstanding at the start:{' '}
            <strong data-opening>{report.opening.outstanding}</strong>.
          </p>
          <OutstandingChart report={report} />
          <table class="report">
            <thead>
              <tr>
                <th>from</th>
                <th>to</th>
                {[...FLOWS, ...BALANCES].map((c) => (
                  <th class="num">{c.replace('_', ' ')}</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {report.buckets.map((b) => (
                <tr data-bucket={b.start}>
                  <td>{b.start}</td>
                  <td>{b.end}</td>
                  {[...FLOWS, ...BALANCES].map((c) => (
                    <td class="num" data-col={c}>
                      {b[c]}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </main>
  )
}

/** The report as CSV, fetched with the session (a plain link could not ask for text/csv) and saved. */
async function download(shop: string, report: PointsReport) {
  const res = await fetch(`/v3/admin/shops/${enc(shop)}/points-report${query({ from: report.from, to: report.to, bucket: report.bucket })}`, {
    credentials: 'same-origin',
    headers: { accept: 'text/csv' },
  })
  // A refusal (a 503, a session that ended) is shown, not saved as the CSV.
  if (!res.ok || !(res.headers.get('content-type') ?? '').startsWith('text/csv')) throw await problemOf(res)
  const a = document.createElement('a')
  a.href = URL.createObjectURL(await res.blob())
  a.download = `points-report-${shop}-${report.from}-${report.to}.csv`
  a.click()
  URL.revokeObjectURL(a.href)
}

/** A failed answer as the error the page shows: its problem, or its status. */
async function problemOf(res: Response): Promise<Error> {
  const type = res.headers.get('content-type') ?? ''
  if (type.includes('json')) return new ApiError(await res.json())
  return new Error(`the CSV could not be downloaded: ${res.status} ${res.statusText}`)
}
