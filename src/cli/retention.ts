import type { Clock } from '../clock.ts'
import { statSync } from 'node:fs'
import { Command, InvalidArgumentError } from 'commander'
import { formatUs } from '../domain/time.ts'
import { sayDatabase, withBackend } from './backend.ts'

// `events prune` and `backup`: the event log stays bounded, and the embedded database can be copied.
// What they run is imported when they run, so that --help does not load it.

function days(value: string): number {
  // As EVENT_RETENTION_DAYS: at most a century, so that the cutoff stays a valid instant.
  if (!/^\d+(\.\d+)?$/.test(value) || Number(value) > 36_500) throw new InvalidArgumentError('a number of days up to 36500, such as 30 or 0.5')
  // 0 is EVENT_RETENTION_DAYS's "keep everything": here it would mean the opposite.
  if (Number(value) === 0) {
    throw new InvalidArgumentError(
      '--older-than 0 would delete every event, while EVENT_RETENTION_DAYS=0 keeps every event; give a period above 0, such as 30 or 0.5',
    )
  }
  return Number(value)
}

const mb = (bytes: number) => `${(bytes / 1_048_576).toFixed(1)} MB`
const when = (us: number | null) => (us === null ? 'none' : formatUs(us))
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export function retentionCommands(clock: Clock): Command[] {
  const events = new Command('events').description('the stored webhooks (events)')
  events
    .command('prune')
    .description('delete events older than the retention period (their body, headers and idempotency key), oldest first, in small transactions')
    .option('--older-than <days>', 'the period in days (default EVENT_RETENTION_DAYS)', days)
    .option('--dry-run', 'only count what would be deleted')
    .option(
      '--vacuum',
      'SQLite: afterwards, give every free page back to the file system (a file made before incremental vacuum is rewritten once, which needs the service stopped)',
    )
    .action(async (options: { olderThan?: number; dryRun?: boolean; vacuum?: boolean }) => {
      const [{ loadConfig }, { default: cliProgress }, { vacuumSqlite }, { eventsBefore, oldestEventUs, pruneEvents, PRUNE_BATCH, retentionCutoffUs }] =
        await Promise.all([import('../config.ts'), import('cli-progress'), import('../db/backup.ts'), import('../repos/prune.ts')])
      const url = loadConfig().DATABASE_URL
      if (options.vacuum && !url.startsWith('sqlite:')) throw new Error('--vacuum is for SQLite; on PostgreSQL autovacuum reuses the space of pruned rows')
      await withBackend(async (backend) => {
        const period = options.olderThan ?? loadConfig().EVENT_RETENTION_DAYS
        if (options.olderThan === undefined && period === 0) {
          throw new Error('EVENT_RETENTION_DAYS is 0, which keeps every event; pass --older-than DAYS to prune anyway')
        }
        const cutoffUs = retentionCutoffUs(period, clock.nowUs())
        const before = await eventsBefore(backend, cutoffUs)
        const sizeBefore = await backend.sizeBytes()
        if (options.dryRun) {
          console.log(
            `${before.count} event${before.count === 1 ? '' : 's'} received before ${formatUs(cutoffUs)} would be deleted (oldest stored: ${when(before.oldestUs)}; database ${mb(sizeBefore)})`,
          )
          return
        }
        const bar = new cliProgress.SingleBar({ format: 'pruning events |{bar}| {value}/{total}', stream: process.stderr }, cliProgress.Presets.shades_classic)
        bar.start(before.count, 0)
        let deleted = 0
        for (;;) {
          const started = clock.monotonicMs()
          const count = await pruneEvents(backend, cutoffUs, PRUNE_BATCH)
          deleted += count
          bar.update(Math.min(deleted, Math.max(before.count, deleted)), { total: Math.max(before.count, deleted) })
          if (count < PRUNE_BATCH) break
          // As long again as the transaction took: a running service gets the write lock half the time at least.
          await sleep(Math.max(5, clock.monotonicMs() - started))
        }
        bar.stop()
        console.log(
          `deleted ${deleted} event${deleted === 1 ? '' : 's'} received before ${formatUs(cutoffUs)}; oldest stored now: ${when(await oldestEventUs(backend))}; ` +
            `database ${mb(sizeBefore)} before, ${mb(await backend.sizeBytes())} now`,
        )
      })
      // Once the command's own connections are closed: a first VACUUM needs the file to itself.
      if (options.vacuum && !options.dryRun) {
        const path = url.slice('sqlite:'.length)
        const done = vacuumSqlite(path)
        console.log(`${done}; database ${mb(statSync(path).size)}`)
      }
    })

  const backup = new Command('backup')
    .description('copy the SQLite database to PATH while the service runs (SQLite online backup), then check the copy; PostgreSQL: use pg_dump')
    .argument('<path>', 'the new file; never overwritten')
    .action(async (path: string) => {
      const [{ loadConfig }, { default: cliProgress }, { backupSqlite }] = await Promise.all([
        import('../config.ts'),
        import('cli-progress'),
        import('../db/backup.ts'),
      ])
      const url = loadConfig().DATABASE_URL
      // Copies a file that must be there: none is made, so none is said to be new.
      sayDatabase(url)
      if (!url.startsWith('sqlite:'))
        throw new Error('backup copies the embedded SQLite database; for PostgreSQL use pg_dump (see docs/operate/retention-and-backup.md)')
      const bar = new cliProgress.SingleBar({ format: 'copying |{bar}| {total} pages', stream: process.stderr }, cliProgress.Presets.shades_classic)
      const result = await backupSqlite(url.slice('sqlite:'.length), path, (total) => bar.start(total, 0))
      bar.update(result.pages)
      bar.stop()
      console.log(`copied ${result.pages} pages (${mb(result.bytes)}) to ${path}; integrity_check: ok`)
    })
  return [events, backup]
}
