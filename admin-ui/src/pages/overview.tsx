import { useEffect, useState } from 'preact/hooks'
import { api, ApiError, enc, query, type Dashboard } from '../api.ts'
import { ErrorBox, loadShops, ShopPicker, defaultShop } from '../components/common.tsx'
import { SeriesChart } from '../components/series-chart.tsx'
import { useData } from '../hooks/use-data.ts'
import { link, navigate, route } from '../router.ts'

// The program dashboard (GET /v3/admin/shops/{shop}/dashboard, docs/program/dashboard.md): what
// the program did for the shop over a range of its days, each headline figure against the period
// before, the daily series as charts, and the series as a CSV download. The range is the page's
// query (?shop=&days=30, or &from=&to= for a custom one), so a view can be bookmarked. Webhook
// traffic is on its own page (Webhook health).

const RANGES = [7, 30, 90, 365] as const

type Headline = Dashboard['previous']

/** A card's figure: a count, a share, or points, as one number to compare with the period before. */
interface CardSpec {
  id: string
  label: string
  value: (h: Headline) => number | null
  /** How it reads: a count, or a share (0–1). */
  kind?: 'count' | 'share'
  help: string
}

const CARDS: CardSpec[] = [
  { id: 'members', label: 'Members', value: (h) => h.members.total, help: 'live customers at the end of the range' },
  { id: 'new-members', label: 'New members', value: (h) => h.members.new, help: 'customers who joined in the range' },
  { id: 'orders', label: 'Orders', value: (h) => h.orders.count, help: 'paid, neither cancelled nor refunded' },
  { id: 'member-orders', label: "Members' orders", value: (h) => h.orders.members, help: 'orders whose points a customer holds' },
  { id: 'repeat-rate', label: 'Repeat rate', value: (h) => h.repeat_rate, kind: 'share', help: 'of the members who ordered, those who ordered twice or more' },
  { id: 'points-issued', label: 'Points issued', value: (h) => h.points.issued.total, help: 'orders, bonuses, referrals, imports and operators' },
  { id: 'points-redeemed', label: 'Points redeemed', value: (h) => h.points.redeemed, help: 'net of redemptions given back' },
  { id: 'redemption-rate', label: 'Redemption rate', value: (h) => h.redemption_rate, kind: 'share', help: 'redeemed of issued' },
  { id: 'points-expired', label: 'Points expired', value: (h) => h.points.expired, help: 'expired by the rule' },
  { id: 'outstanding', label: 'Outstanding', value: (h) => h.points.outstanding, help: "the customers' points at the end of the range" },
  { id: 'referrals', label: 'Referrals claimed', value: (h) => h.referrals.claimed, help: 'friends who claimed a code' },
]

const show = (value: number | null, kind: CardSpec['kind']) =>
  value === null ? '—' : kind === 'share' ? `${(value * 100).toFixed(1)}%` : value.toLocaleString('en')

/** The change from the period before, as the card says it. */
function change(now: number | null, before: number | null, kind: CardSpec['kind']): { text: string; trend: 'up' | 'down' | 'flat' } {
  if (now === null || before === null) return { text: 'no figure to compare', trend: 'flat' }
  if (now === before) return { text: 'as before', trend: 'flat' }
  const trend = now > before ? 'up' : 'down'
  if (kind === 'share') return { text: `${now > before ? '+' : '−'}${(Math.abs(now - before) * 100).toFixed(1)} points`, trend }
  if (before === 0) return { text: `${now > before ? '+' : '−'}${Math.abs(now - before).toLocaleString('en')} (none before)`, trend }
  return { text: `${now > before ? '+' : '−'}${((Math.abs(now - before) / Math.abs(before)) * 100).toFixed(1)}%`, trend }
}

function Card({ spec, d }: { spec: CardSpec; d: Dashboard }) {
  const now = spec.value(d)
  const before = spec.value(d.previous)
  const delta = change(now, before, spec.kind)
  return (
    <div class="kpi" data-card={spec.id} title={spec.help}>
      <span class="label">{spec.label}</span>
      <span class="figure" data-value>
        {show(now, spec.kind)}
      </span>
      <span class={`delta ${delta.trend}`} data-previous={before === null ? '' : String(before)}>
        {delta.text} <span class="muted">(before: {show(before, spec.kind)})</span>
      </span>
    </div>
  )
}

export function Overview() {
  const params = route.value.params
  const shop = params.get('shop') ?? defaultShop()
  const custom = params.has('from') || params.has('to')
  const days = Number(params.get('days') ?? 30)
  const asked = custom ? { from: params.get('from') ?? '', to: params.get('to') ?? '' } : { days: String(days) }
  const [form, setForm] = useState({ from: params.get('from') ?? '', to: params.get('to') ?? '' })
  const [csvError, setCsvError] = useState<unknown>(null)
  // The shops' list, for the picker: loaded again here, as the page an operator opens first.
  useData(loadShops, [])
  const key = `${shop}?${query(asked)}`
  const loaded = useData(
    shop
      ? () => {
          // The shop's today comes from the service: a range of N days is asked as from = today − (N − 1), through the default `to`.
          if (custom)
            return api('GET', '/v3/admin/shops/{shop}/dashboard', {
              params: { shop },
              query: { from: params.get('from') || undefined, to: params.get('to') || undefined },
            })
          return api('GET', '/v3/admin/shops/{shop}/dashboard', { params: { shop } }).then((latest) =>
            days === 30
              ? latest
              : api('GET', '/v3/admin/shops/{shop}/dashboard', { params: { shop }, query: { from: minusDays(latest.to, days - 1), to: latest.to } }),
          )
        }
      : null,
    [key],
    { onLoad: (d) => (setCsvError(null), setForm({ from: d.from, to: d.to })) },
  )
  useEffect(() => setForm({ from: params.get('from') ?? '', to: params.get('to') ?? '' }), [key])
  const d = loaded.error ? undefined : loaded.data
  const go = (next: Record<string, string>) => navigate(query({ shop, ...next }) || '?')
  return (
    <main>
      <div class="toolbar">
        <h1>Program</h1>
        <ShopPicker value={shop} onChange={(s) => go({ shop: s, ...(custom ? form : { days: String(days) }) })} />
        <label>
          Range{' '}
          <select
            name="range"
            value={custom ? 'custom' : String(days)}
            onChange={(e) => {
              const v = (e.currentTarget as HTMLSelectElement).value
              if (v === 'custom') go({ from: form.from, to: form.to })
              else go({ days: v })
            }}
          >
            {RANGES.map((n) => (
              <option value={String(n)}>last {n} days</option>
            ))}
            <option value="custom">custom</option>
          </select>
        </label>
        {d && (
          <button type="button" name="csv" onClick={() => download(shop, d).then(() => setCsvError(null), setCsvError)}>
            Download CSV
          </button>
        )}
        <a class="right" {...link('health')}>
          webhook health →
        </a>
      </div>
      {custom && (
        <form
          class="report-form"
          onSubmit={(e) => {
            e.preventDefault()
            go({ from: form.from, to: form.to })
          }}
        >
          <label>
            From <input name="from" type="date" value={form.from} onInput={(e) => setForm({ ...form, from: (e.currentTarget as HTMLInputElement).value })} />
          </label>
          <label>
            To <input name="to" type="date" value={form.to} onInput={(e) => setForm({ ...form, to: (e.currentTarget as HTMLInputElement).value })} />
          </label>
          <button type="submit">Show</button>
        </form>
      )}
      <ErrorBox error={csvError ?? loaded.error} />
      {!shop && (
        <p class="muted">
          No shop yet: <code>npx shop-intake keys create --shop NAME</code> creates one.
        </p>
      )}
      {d && <DashboardView d={d} />}
    </main>
  )
}

function DashboardView({ d }: { d: Dashboard }) {
  const currencies = [...new Set([...d.revenue.map((r) => r.currency), ...d.previous.revenue.map((r) => r.currency)])]
  const revenueOf = (h: Headline, currency: string) => {
    const r = h.revenue.find((x) => x.currency === currency)
    return r ? Number(r.members) + Number(r.guests) : 0
  }
  return (
    <>
      <p class="muted" data-range>
        {d.from} to {d.to}, the days of {d.time_zone}; compared with {d.previous.from} to {d.previous.to}.
      </p>
      <div class="kpis">
        {CARDS.map((spec) => (
          <Card spec={spec} d={d} />
        ))}
        {currencies.map((currency) => (
          <Card
            spec={{
              id: `revenue-${currency}`,
              label: `Revenue, ${currency}`,
              value: (h) => Math.round(revenueOf(h, currency) * 100) / 100,
              help: 'subtotals of the orders counted',
            }}
            d={d}
          />
        ))}
      </div>
      <div class="charts">
        <section class="card">
          <h2>Orders and new members per day</h2>
          <SeriesChart
            name="activity"
            dates={d.series.map((s) => s.date)}
            lines={[
              { label: 'orders', colour: '#1f5fbf', values: d.series.map((s) => s.orders) },
              { label: 'new members', colour: '#2e8540', values: d.series.map((s) => s.new_members) },
            ]}
          />
        </section>
        <section class="card">
          <h2>Points issued and redeemed per day</h2>
          <SeriesChart
            name="points"
            dates={d.series.map((s) => s.date)}
            lines={[
              { label: 'issued', colour: '#1f5fbf', values: d.series.map((s) => s.points_issued) },
              { label: 'redeemed', colour: '#c62828', values: d.series.map((s) => s.points_redeemed) },
            ]}
          />
        </section>
        {currencies.length > 0 && (
          <section class="card">
            <h2>Revenue per day</h2>
            <SeriesChart
              name="revenue"
              dates={d.series.map((s) => s.date)}
              lines={currencies.map((currency, i) => ({
                label: currency,
                colour: ['#6a1b9a', '#b8860b', '#00838f', '#607d8b'][i % 4]!,
                values: d.series.map((s) => Number(s.revenue.find((r) => r.currency === currency)?.amount ?? 0)),
              }))}
            />
          </section>
        )}
      </div>
      <div class="columns">
        <section class="card">
          <h2>Points</h2>
          <table class="report" data-table="points">
            <tbody>
              {(['orders', 'bonuses', 'referrals', 'imports', 'manual', 'activities'] as const).map((source) => (
                <tr>
                  <td>issued: {source}</td>
                  <td class="num">{d.points.issued[source]}</td>
                </tr>
              ))}
              <tr>
                <td>redeemed</td>
                <td class="num">{d.points.redeemed}</td>
              </tr>
              <tr>
                <td>expired</td>
                <td class="num">{d.points.expired}</td>
              </tr>
              <tr>
                <td>reversed</td>
                <td class="num">{d.points.reversed}</td>
              </tr>
            </tbody>
          </table>
        </section>
        <section class="card">
          <h2>Tiers</h2>
          <table class="report" data-table="tiers">
            <tbody>
              {d.tiers.map((t) => (
                <tr>
                  <td>{t.tier ?? 'no tier'}</td>
                  <td class="num">{t.members}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <p class="muted">
            Moves in the range: {d.moves.up} up, {d.moves.down} down.
          </p>
        </section>
        <section class="card">
          <h2>Referrals</h2>
          <p data-referrals>
            {d.referrals.claimed} claimed, {d.referrals.qualified} qualified, {d.referrals.rewarded} rewarded, {d.referrals.voided} voided
          </p>
          <h2>Rewards claimed</h2>
          {d.claims.length === 0 ? (
            <p class="muted">None in the range.</p>
          ) : (
            <table class="report" data-table="claims">
              <tbody>
                {d.claims.map((c) => (
                  <tr>
                    <td>{c.name}</td>
                    <td class="num">{c.claims}</td>
                    <td class="num">{c.points} points</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </section>
      </div>
    </>
  )
}

/** A date `n` days before a date (YYYY-MM-DD), in the civil calendar. */
function minusDays(date: string, n: number): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) - n * 86_400_000).toISOString().slice(0, 10)
}

/** The series as CSV, fetched with the session (a plain link could not ask for text/csv) and saved. */
async function download(shop: string, d: Dashboard) {
  const res = await fetch(`/v3/admin/shops/${enc(shop)}/dashboard${query({ from: d.from, to: d.to })}`, {
    credentials: 'same-origin',
    headers: { accept: 'text/csv' },
  })
  // A refusal (a 503, a session that ended) is shown, not saved as the CSV.
  if (!res.ok || !(res.headers.get('content-type') ?? '').startsWith('text/csv')) {
    const type = res.headers.get('content-type') ?? ''
    throw type.includes('json') ? new ApiError(await res.json()) : new Error(`the CSV could not be downloaded: ${res.status} ${res.statusText}`)
  }
  const a = document.createElement('a')
  a.href = URL.createObjectURL(await res.blob())
  a.download = `dashboard-${shop}-${d.from}-${d.to}.csv`
  a.click()
  URL.revokeObjectURL(a.href)
}
