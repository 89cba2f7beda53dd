// The cost tables `npm run bench` prints after its throughput table; the results JSON has every figure.
import type { Costs } from './costs.ts'
import type { StatementStats } from './own-postgres.ts'
import type { WalPhase } from './wal-phase.ts'

const blank = (v: number | null | undefined) => (v === null || v === undefined ? '' : v)

export function printCosts(results: readonly { target: string; workers?: number; costs?: Costs }[]): void {
  const rows = results.filter((r) => r.costs)
  if (rows.length === 0) return
  console.log('costs per webhook (CPU in µs; bytes), and per batch:')
  console.table(
    rows.map(({ target, workers, costs: c }) => ({
      target: target + (workers ? ` (${workers} workers)` : ''),
      'CPU µs': c!.service_cpu_us,
      'event loop': c!.service_cpu_split_us.event_loop,
      'writer thread': blank(c!.service_cpu_split_us.writer_thread),
      'other threads': c!.service_cpu_split_us.other,
      'PG backends µs': blank(c!.postgres_cpu_us?.backends),
      'PG server µs': blank(c!.postgres_cpu_us?.server),
      'write_bytes B': c!.bytes_written_per_webhook,
      'wchar B': c!.wchar_per_webhook,
      'PG WAL B': blank(c!.wal_bytes_per_webhook),
      batch: blank(c!.avg_batch),
      'stmts/batch': blank(c!.statements_per_batch),
      'trips/batch': blank(c!.round_trips_per_batch),
    })),
  )
}

export function printWalPages(target: string, w: WalPhase): void {
  console.log(
    `${target}: pages written, in ${w.seconds} s more of the mix with the WAL held (${w.webhooks} webhooks in ${w.batches} batches of ${w.batches > 0 ? Math.round((w.webhooks / w.batches) * 10) / 10 : 0} on average, ${w.commits} commits): ` +
      `${w.frames_per_webhook} pages (${w.bytes_per_webhook} bytes) per webhook, ${w.pages_per_commit} pages per commit` +
      (w.complete ? '' : ' (INCOMPLETE: the WAL was reset during the phase)'),
  )
  console.table(
    w.btrees.slice(0, 15).map((b) => ({
      'table or index': b.name,
      'pages/webhook': b.frames_per_webhook,
      'bytes/webhook': b.bytes_per_webhook,
      'distinct pages': b.distinct_pages,
    })),
  )
}

export function printStatements(target: string, statements: readonly StatementStats[]): void {
  console.log(`${target}: top 10 statements by total execution time (pg_stat_statements over the timed run; 20 in the results JSON):`)
  console.table(
    statements.slice(0, 10).map((s) => ({
      calls: s.calls,
      'total ms': Math.round(s.total_exec_ms),
      'mean ms': s.mean_exec_ms,
      plans: s.plans,
      'plan ms': s.mean_plan_ms,
      rows: s.rows,
      'hit/read/dirtied': `${s.shared_blks_hit}/${s.shared_blks_read}/${s.shared_blks_dirtied}`,
      'WAL B': s.wal_bytes,
      query: s.query.replace(/\s+/g, ' ').slice(0, 60),
    })),
  )
}
