// The service's /metrics, read by the bench before and after a run: batches, their webhooks, and
// the write path's statements and round trips.

/** The sum of every series of `name` (any labels) in a Prometheus text exposition; 0 when absent. */
export function metricSum(text: string, name: string): number {
  let sum = 0
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue
    const rest = line.slice(name.length)
    const m = /^(?:\{[^}]*\})? (\S+)/.exec(rest)
    if (m) sum += Number(m[1])
  }
  return sum
}

export interface WritePathCounts {
  /** Committed batches, and the webhooks and commands in them (shop_intake_batch_size). */
  batches: number
  items: number
  statements: number
  roundTrips: number
  queueDepth: number
}

export function writePathCounts(text: string): WritePathCounts {
  return {
    batches: metricSum(text, 'shop_intake_batch_size_count'),
    items: metricSum(text, 'shop_intake_batch_size_sum'),
    statements: metricSum(text, 'shop_intake_db_statements_total'),
    roundTrips: metricSum(text, 'shop_intake_db_round_trips_total'),
    queueDepth: metricSum(text, 'shop_intake_write_queue_depth'),
  }
}

export async function scrapeWritePath(port: number): Promise<WritePathCounts> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`)
  if (!res.ok) throw new Error(`/metrics answered ${res.status}`)
  return writePathCounts(await res.text())
}

/**
 * Waits until the service has committed what it was sent: no webhook queued, and no batch
 * committed in the last half second (a batch in flight is not in the queue). Gives up after `ms`.
 */
export async function drained(port: number, ms = 20_000): Promise<WritePathCounts> {
  const until = Date.now() + ms
  let last = await scrapeWritePath(port)
  for (;;) {
    await new Promise((r) => setTimeout(r, 500))
    const now = await scrapeWritePath(port)
    if ((now.queueDepth === 0 && now.batches === last.batches) || Date.now() > until) return now
    last = now
  }
}
