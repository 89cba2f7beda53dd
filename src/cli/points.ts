import type { Clock } from '../clock.ts'
import { Command, InvalidArgumentError } from 'commander'
import { formatInstant, formatUs } from '../domain/time.ts'
import { expiryOf, versionedRule } from '../loyalty/rule.ts'
import { customerExpiry, DAY_US, expiringBetween } from '../loyalty/wallet.ts'
import { allShopIds, findShop } from '../repos/keys-repo.ts'
import { customerBalances, customerEntries, customerLots } from '../repos/points-repo.ts'
import { readRule } from '../repos/rule-repo.ts'
import { buildReport, formatDay, parseReportRange, REPORT_FLOWS, reportCsv } from '../loyalty/points-report.ts'
import { ledgerDaySums } from '../repos/report-repo.ts'
import { findStoredCustomer } from '../repos/read-repo.ts'
import { withBackend } from './backend.ts'

/** The deadline of each statement of points rebuild and points import, batch jobs, when DB_TIMEOUT_MS is shorter. */
const BATCH_JOB_STATEMENT_MS = 60_000
import { shopName } from './keys.ts'

function customerId(value: string): number {
  if (!/^[1-9]\d{0,15}$/.test(value) || !Number.isSafeInteger(Number(value)))
    throw new InvalidArgumentError("a positive whole number, the shop's id of the customer")
  return Number(value)
}

function count(value: string): number {
  if (!/^[1-9]\d{0,2}$/.test(value)) throw new InvalidArgumentError('a whole number from 1 to 999')
  return Number(value)
}

/** Text columns padded to their widest cell. */
function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
}

export function pointsCommand(clock: Clock): Command {
  const points = new Command('points').description('the points ledger')
  points
    .command('show')
    .description("a customer's balances, what expires in the next 30 days and their latest ledger entries, for support staff")
    .requiredOption('--shop <name>', 'the shop', shopName)
    .requiredOption('--customer <id>', "the shop's id of the customer", customerId)
    .option('--limit <n>', 'how many of the latest entries to list (default 20)', count)
    .action((options: { shop: string; customer: number; limit?: number }) =>
      withBackend(async ({ db }) => {
        const shop = await findShop(db, options.shop)
        if (!shop) throw new Error(`no shop named ${options.shop}`)
        const nowUs = clock.nowUs()
        const [stored, balances, page, lots, rule] = await Promise.all([
          findStoredCustomer(db, shop.id, options.customer),
          customerBalances(db, shop.id, options.customer, nowUs),
          customerEntries(db, shop.id, options.customer, options.limit ?? 20, null),
          customerLots(db, shop.id, options.customer),
          readRule(db, shop.id),
        ])
        const customer = stored?.record
        if (!customer && page.rows.length === 0) throw new Error(`no customer ${options.customer} in shop ${options.shop}`)
        const name = [customer?.first_name, customer?.last_name].filter(Boolean).join(' ')
        console.log(`customer ${options.customer}${name ? ` (${name})` : ''} of shop ${options.shop}${customer?.deleted ? ', deleted' : ''}`)
        console.log(
          table([
            ['available', String(balances.available)],
            ['pending', String(balances.pending)],
            ['lifetime earned', String(balances.lifetime_earned)],
          ]),
        )
        if (balances.available < 0) console.log('in debt: a refund or cancel took back points that had been spent')
        const schedule = expiryOf(versionedRule(rule))
        const fixed = stored?.loyalty.importExpiry ?? null
        const expiring = expiringBetween(lots, nowUs, nowUs + 30 * DAY_US, customerExpiry(schedule, fixed))
        if (schedule.days === 0 && fixed === null) console.log("points never expire under the shop's rule")
        else if (expiring.length === 0) console.log('nothing expires in the next 30 days')
        else for (const e of expiring) console.log(`${e.points} points expire at ${formatUs(e.at_us)}`)
        if (page.rows.length === 0) {
          console.log('no ledger entries')
          return
        }
        console.log(`latest ${page.rows.length} entr${page.rows.length === 1 ? 'y' : 'ies'}, newest first:`)
        console.log(
          table([
            ['created_at', 'reason', 'points', 'order', 'redemption', 'available_at', 'debt'],
            ...page.rows.map((r) => [
              formatInstant(r.created_at),
              r.reason,
              String(r.points),
              r.order_id === null ? '-' : String(r.order_id),
              r.redemption_id ?? '-',
              formatInstant(r.available_at),
              Number(r.debt) === 1 ? 'debt' : '',
            ]),
          ]),
        )
      }),
    )
  points
    .command('report')
    .description(
      'the points liability: earned, reversed, redeemed, given back, expired, adjusted and outstanding per day, ISO week or month (UTC), as GET /v3/admin/shops/{shop}/points-report',
    )
    .requiredOption('--shop <name>', 'the shop', shopName)
    .option('--from <date>', 'the first day, YYYY-MM-DD (default: 29 days before --to)')
    .option('--to <date>', 'the last day, YYYY-MM-DD, included (default: today)')
    .option('--bucket <bucket>', 'day, week or month (default: day)')
    .option('--format <format>', 'table or csv (default: table)', (value: string) => {
      if (value !== 'table' && value !== 'csv') throw new InvalidArgumentError('table or csv')
      return value
    })
    .action((options: { shop: string; from?: string; to?: string; bucket?: string; format?: 'table' | 'csv' }) =>
      withBackend(async ({ db }) => {
        const range = parseReportRange(options, Math.floor(clock.nowMs() / 86_400_000))
        if ('problem' in range) throw new Error(range.problem.replace(/^(from|to|bucket)\b/, '--$1'))
        const shop = await findShop(db, options.shop)
        if (!shop) throw new Error(`no shop named ${options.shop}`)
        const report = buildReport(range, await ledgerDaySums(db, Number(shop.id), formatDay(range.to + 1)))
        if (options.format === 'csv') {
          process.stdout.write(reportCsv(report))
          return
        }
        const columns = ['start', 'end', ...REPORT_FLOWS, 'outstanding', 'available', 'pending'] as const
        console.log(`points of shop ${options.shop}'s customers, ${report.from} to ${report.to} by ${report.bucket} (UTC)`)
        console.log(`outstanding at the start: ${report.opening.outstanding} (${report.opening.available} available, ${report.opening.pending} pending)`)
        console.log(table([[...columns], ...report.buckets.map((b) => columns.map((c) => String(b[c])))]))
      }),
    )
  points
    .command('rebuild')
    .description("recompute every order's points from its stored state and the current rule; append only the corrections")
    .option('--shop <name>', 'only this shop', shopName)
    .action((options: { shop?: string }) =>
      withBackend(
        async (backend) => {
          const [{ default: cliProgress }, { rebuildPoints }] = await Promise.all([import('cli-progress'), import('../write/rebuild.ts')])
          let shopIds: number[]
          if (options.shop !== undefined) {
            const shop = await findShop(backend.db, options.shop)
            if (!shop) throw new Error(`no shop named ${options.shop}`)
            shopIds = [shop.id]
          } else {
            shopIds = await allShopIds(backend.db)
          }
          const bar = new cliProgress.SingleBar(
            { format: 'rebuilding points |{bar}| {value}/{total} orders | {appended} corrections', stream: process.stderr },
            cliProgress.Presets.shades_classic,
          )
          let started = false
          const result = await rebuildPoints(backend, shopIds, clock, (p) => {
            if (!started) {
              bar.start(p.total, 0, { appended: 0 })
              started = true
            }
            bar.update(p.done, { appended: p.appended })
          })
          bar.stop()
          console.log(`checked ${result.done} orders; appended ${result.appended} ledger entr${result.appended === 1 ? 'y' : 'ies'}`)
        },
        // A batch job, not a request: a page of 500 orders that waits for the service's batches, or
        // takes a while on a loaded database, is not cut at DB_TIMEOUT_MS (which failed rebuilds at random).
        { statementMs: BATCH_JOB_STATEMENT_MS },
      ),
    )
  points
    .command('import')
    .description(
      'bring balances over from another platform: a CSV of customer_id, email, points (and optionally expires_at, an instant, and tier); importing the same file again changes nothing, a corrected file writes only the differences',
    )
    .requiredOption('--shop <name>', 'the shop', shopName)
    .requiredOption('--file <path>', 'the CSV of balances, its first line naming the columns')
    .option('--dry-run', 'check the file and say what it would change; write nothing')
    .action((options: { shop: string; file: string; dryRun?: boolean }) =>
      withBackend(
        async (backend) => {
          const [{ default: cliProgress }, { readFileSync }, { readBalanceFile }, { importBalances }, { shopTiers }, { auditCommandLine }] = await Promise.all([
            import('cli-progress'),
            import('node:fs'),
            import('../http/intake/balance-file.ts'),
            import('../rewards/balance-import.ts'),
            import('../rewards/catalogue.ts'),
            import('./audit.ts'),
          ])
          const shop = await findShop(backend.db, options.shop)
          if (!shop) throw new Error(`no shop named ${options.shop}`)
          const read = readBalanceFile(readFileSync(options.file), await shopTiers(backend.db, shop.id))
          if ('problems' in read) {
            const shown = read.problems.slice(0, 10).map((p) => p.detail)
            const more = read.count > shown.length ? `; and ${read.count - shown.length} more` : ''
            throw new Error(`${options.file} has ${read.count} problem${read.count === 1 ? '' : 's'}, nothing was imported: ${shown.join('; ')}${more}`)
          }
          const bar = new cliProgress.SingleBar(
            { format: `${options.dryRun ? 'checking' : 'importing'} balances |{bar}| {value}/{total} lines | {entries} entries`, stream: process.stderr },
            cliProgress.Presets.shades_classic,
          )
          bar.start(read.lines.length, 0, { entries: 0 })
          const summary = await importBalances(backend, shop.id, read.lines, {
            clock,
            dryRun: options.dryRun === true,
            onProgress: (s) => bar.update(s.lines, { entries: s.entries }),
          })
          bar.stop()
          if (!options.dryRun)
            await auditCommandLine(
              backend.db,
              { action: 'points.import', shopId: shop.id, target: null, detail: { ...summary, dry_run: undefined } },
              clock.nowUs(),
            )
          console.log(
            `${options.dryRun ? 'dry run, nothing written: would import' : 'imported'} ${summary.lines} lines of shop ${options.shop}: ` +
              `${summary.customers_created} new customers, ${summary.entries} entries (${summary.points_added} points added, ${summary.points_taken} taken back), ` +
              `${summary.unchanged} unchanged, ${summary.skipped_deleted} skipped (deleted customers); ` +
              `${summary.expiry_changed} expiry dates set or changed, ${summary.points_expired} points expired at once (expires_at passed)` +
              // Named only when some changed, so that a file without tiers reads as before.
              (summary.tier_changed > 0 ? `; ${summary.tier_changed} imported tiers set, changed or cleared` : ''),
          )
        },
        // A batch job too: a unit whose write waits for the other lane's commit, on a loaded
        // database, is not cut at DB_TIMEOUT_MS.
        { statementMs: BATCH_JOB_STATEMENT_MS },
      ),
    )
  return points
}
