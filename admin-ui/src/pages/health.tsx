import { useEffect, useState } from 'preact/hooks'
import { api, countOf, enc, type ShopSummary, type Stats } from '../api.ts'
import { OutcomeChart } from '../components/chart.tsx'
import { ErrorBox, loadShops, Outcome } from '../components/common.tsx'
import { percent } from '../format.ts'
import { useData } from '../hooks/use-data.ts'

/** `1 customer`, `2 customers`. */
const count = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`
import { link } from '../router.ts'

const WINDOWS = [60, 180, 360, 720, 1440]
const REFRESH_MS = 15_000

function sum(stats: Stats, outcome?: string): number {
  let total = 0
  for (const m of stats.minutes) {
    for (const o of stats.outcomes) if (outcome === undefined || o === outcome) total += countOf(m, o)
  }
  return total
}

function ShopCard({ shop, minutes, tick }: { shop: ShopSummary; minutes: number; tick: number }) {
  const { data: stats, error } = useData(() => api('GET', '/v3/admin/stats', { query: { shop: shop.name, minutes } }), [shop.name, minutes, tick])
  const day = Object.values(shop.last_24h ?? {}).reduce((a, b) => a + b, 0)
  const total = stats ? sum(stats) : 0
  const rejected = stats ? sum(stats, 'rejected') : 0
  return (
    <section class="card shop" data-shop={shop.name}>
      <header>
        <h2>{shop.name}</h2>
        <span class="muted">
          {count(shop.customers, 'customer')} · {count(shop.orders, 'order')}
        </span>
        <a class="right" {...link(`events?shop=${enc(shop.name)}`)}>
          events →
        </a>
      </header>
      <div class="figures">
        <div>
          <span class="figure" data-figure="rejection-rate">
            {percent(rejected, total)}
          </span>
          <span class="muted">
            rejected, last {minutes >= 120 ? `${minutes / 60} h` : `${minutes} min`} ({rejected} of {total})
          </span>
        </div>
        <div>
          <span class="figure">{percent(shop.last_24h?.rejected ?? 0, day)}</span>
          <span class="muted">rejected, last 24 h ({day} webhooks)</span>
        </div>
        <div class="outcomes">
          {Object.entries(shop.last_24h ?? {}).map(([o, n]) => (
            <span>
              <Outcome outcome={o} /> {n}
            </span>
          ))}
        </div>
      </div>
      <ErrorBox error={error} />
      {stats && <OutcomeChart stats={stats} />}
    </section>
  )
}

/** Webhook health: each shop's webhooks by outcome over a window, and the write queue (the overview before the program dashboard). */
export function Health() {
  const [minutes, setMinutes] = useState(180)
  const [tick, setTick] = useState(0)
  const { data: list, error: listError } = useData(loadShops, [tick])
  // The queue is the process's, not a shop's: any stats answer carries it.
  const { data: queue, error: queueError } = useData(() => api('GET', '/v3/admin/stats', { query: { minutes: 1 } }).then((s) => s.queue), [tick])
  const error = listError ?? queueError
  useEffect(() => {
    const timer = setInterval(() => setTick((t) => t + 1), REFRESH_MS)
    return () => clearInterval(timer)
  }, [])
  return (
    <main>
      <div class="toolbar">
        <h1>Webhook health</h1>
        <label>
          Window{' '}
          <select value={String(minutes)} onChange={(e) => setMinutes(Number((e.currentTarget as HTMLSelectElement).value))}>
            {WINDOWS.map((m) => (
              <option value={String(m)}>{m >= 120 ? `${m / 60} hours` : `${m} minutes`}</option>
            ))}
          </select>
        </label>
        <button type="button" onClick={() => setTick((t) => t + 1)}>
          Refresh
        </button>
        {queue && (
          <span class="queue" data-figure="queue-depth" title="webhooks waiting for a commit now, of WRITER_MAX_QUEUE">
            write queue: <strong>{queue.depth}</strong> / {queue.max}
          </span>
        )}
      </div>
      <ErrorBox error={error} />
      {list && list.length === 0 && (
        <p class="muted">
          No shop yet: <code>npx shop-intake keys create --shop NAME</code> creates one.
        </p>
      )}
      {list?.map((shop) => (
        <ShopCard key={shop.name} shop={shop} minutes={minutes} tick={tick} />
      ))}
    </main>
  )
}
