import { Command, InvalidArgumentError, Option } from 'commander'
import { ON_MISMATCH, type OnMismatch } from '../batch/import-identity.ts'
import type { Clock } from '../clock.ts'
import { formatInstant, formatUs } from '../domain/time.ts'
import { allShopIds, findShop } from '../repos/keys-repo.ts'
import { withBackend } from './backend.ts'
import { shopName } from './keys.ts'

// Each command imports what it runs when it runs (the rule's schema, the repositories, the
// report), so that --help and a bad argument answer without loading them.

/** The deadline of each statement of points rebuild and points import, batch jobs, when DB_TIMEOUT_MS is shorter. */
const BATCH_JOB_STATEMENT_MS = 60_000

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
        const [
          { expiryOf, versionedRule },
          { customerExpiry, DAY_US, expiringBetween },
          { customerBalances, customerEntries, customerLots },
          { readRule },
          { findStoredCustomer },
        ] = await Promise.all([
          import('../loyalty/rule.ts'),
          import('../loyalty/wallet.ts'),
          import('../repos/points-repo.ts'),
          import('../repos/rule-repo.ts'),
          import('../repos/read-repo.ts'),
        ])
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
      'the points liability: earned, reversed, redeemed, given back, expired, adjusted and outstanding per day, ISO week or month (days of the time zone of the shop), as GET /v3/admin/shops/{shop}/points-report',
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
        const [{ buildReport, formatDay, parseReportRange, REPORT_FLOWS, reportCsv }, { ledgerDaySums }, { dayNumber, localDate }] = await Promise.all([
          import('../loyalty/points-report.ts'),
          import('../repos/report-repo.ts'),
          import('../domain/calendar.ts'),
        ])
        const shop = await findShop(db, options.shop)
        // The shop's days, in its time zone: checked after the shop, so that its today is the default --to.
        const range = parseReportRange(options, shop ? dayNumber(localDate(shop.time_zone, clock.nowUs())) : Math.floor(clock.nowMs() / 86_400_000))
        if ('problem' in range) throw new Error(range.problem.replace(/^(from|to|bucket)\b/, '--$1'))
        if (!shop) throw new Error(`no shop named ${options.shop}`)
        const report = buildReport(range, await ledgerDaySums(db, Number(shop.id), formatDay(range.to + 1)))
        if (options.format === 'csv') {
          process.stdout.write(reportCsv(report))
          return
        }
        const columns = ['start', 'end', ...REPORT_FLOWS, 'outstanding', 'available', 'pending'] as const
        console.log(`points of shop ${options.shop}'s customers, ${report.from} to ${report.to} by ${report.bucket} (${shop.time_zone})`)
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
    .option('--file <path>', 'the CSV of balances, its first line naming the columns')
    .option('--dry-run', 'check the file and say what it would change; write nothing')
    .addOption(
      new Option(
        '--on-mismatch <side>',
        "what wins when a line's customer_id and e-mail disagree with the shop's customers (an id known with another e-mail, or a new id with an e-mail a customer holds): " +
          'take-file imports those lines as written, keep-stored leaves them out; without it such a file is refused',
      ).choices(ON_MISMATCH),
    )
    .option('--status', 'list the imports of the shop that were started and not finished (killed midway, say), and write nothing')
    .action((options: { shop: string; file?: string; dryRun?: boolean; onMismatch?: OnMismatch; status?: boolean }) =>
      withBackend(
        async (backend) => {
          const [
            { default: cliProgress },
            { readFileSync },
            { readBalanceFile },
            balanceImport,
            { shopTiers },
            { auditCommandLine, commandLineName },
            repo,
            { TO_FINISH },
          ] = await Promise.all([
            import('cli-progress'),
            import('node:fs'),
            import('../http/intake/balance-file.ts'),
            import('../rewards/balance-import.ts'),
            import('../rewards/catalogue.ts'),
            import('./audit.ts'),
            import('../repos/import-repo.ts'),
            import('../schemas/imports.ts'),
          ])
          const shop = await findShop(backend.db, options.shop)
          if (!shop) throw new Error(`no shop named ${options.shop}`)
          if (options.status) {
            const runs = await repo.unfinishedImportRuns(backend.db, shop.id)
            if (runs.length === 0) console.log(`no unfinished imports of shop ${options.shop}`)
            for (const run of runs)
              console.log(
                `unfinished import ${run.id} of shop ${options.shop}: ${run.lines_done} of ${run.lines_total} lines done, file sha256 ${run.file_sha256}, ` +
                  `started ${formatUs(run.started_us)} by ${run.started_by}, last unit ${formatUs(run.updated_us)}: ${TO_FINISH}`,
              )
            return
          }
          if (options.file === undefined) throw new Error('points import needs --file <path> (or --status)')
          const bytes = readFileSync(options.file)
          const read = readBalanceFile(bytes, await shopTiers(backend.db, shop.id))
          if ('problems' in read) {
            const shown = read.problems.slice(0, 10).map((p) => p.detail)
            const more = read.count > shown.length ? `; and ${read.count - shown.length} more` : ''
            throw new Error(`${options.file} has ${read.count} problem${read.count === 1 ? '' : 's'}, nothing was imported: ${shown.join('; ')}${more}`)
          }
          const checked = await balanceImport.checkIdentities(backend, shop.id, read.lines, options.onMismatch)
          if ('problems' in checked) {
            const shown = checked.problems.slice(0, 10).map((p) => p.detail)
            const more = checked.count > shown.length ? `; and ${checked.count - shown.length} more` : ''
            throw new Error(
              `${options.file} has ${checked.count} line${checked.count === 1 ? '' : 's'} whose customer_id and e-mail disagree with the shop's customers, nothing was imported: ` +
                `${shown.join('; ')}${more}; --on-mismatch take-file imports them as written, --on-mismatch keep-stored leaves them out`,
            )
          }
          const { lines, mismatched } = checked
          const bar = new cliProgress.SingleBar(
            { format: `${options.dryRun ? 'checking' : 'importing'} balances |{bar}| {value}/{total} lines | {entries} entries`, stream: process.stderr },
            cliProgress.Presets.shades_classic,
          )
          const run = options.dryRun
            ? null
            : await repo.startImportRun(backend.db, {
                shopId: shop.id,
                fileSha256: balanceImport.fileSha256(bytes),
                linesTotal: lines.length,
                startedBy: commandLineName(),
                atUs: clock.stampUs(),
              })
          bar.start(lines.length, 0, { entries: 0 })
          const done = await balanceImport.importBalances(backend, shop.id, lines, {
            clock,
            dryRun: options.dryRun === true,
            onUnit: run === null ? undefined : (s) => balanceImport.recordProgress(backend, run, s.lines, clock.stampUs()),
            onProgress: (s) => bar.update(s.lines, { entries: s.entries }),
          })
          bar.stop()
          const summary = { ...done, lines: read.lines.length, mismatched }
          if (run !== null) {
            await repo.finishImportRun(backend.db, run.id, lines.length, clock.stampUs())
            await auditCommandLine(
              backend.db,
              { action: 'points.import', shopId: shop.id, target: null, detail: { ...summary, dry_run: undefined, on_mismatch: options.onMismatch ?? null } },
              clock.nowUs(),
            )
          }
          const mismatches =
            mismatched === 0
              ? ''
              : `; ${mismatched} lines whose customer_id and e-mail disagree with the shop's customers ${options.onMismatch === 'keep-stored' ? 'left out' : 'imported as written'}`
          console.log(
            `${options.dryRun ? 'dry run, nothing written: would import' : 'imported'} ${summary.lines} lines of shop ${options.shop}: ` +
              `${summary.customers_created} new customers, ${summary.entries} entries (${summary.points_added} points added, ${summary.points_taken} taken back), ` +
              `${summary.unchanged} unchanged, ${summary.skipped_deleted} skipped (deleted customers); ` +
              `${summary.expiry_changed} expiry dates set or changed, ${summary.points_expired} points expired at once (expires_at passed)${mismatches}` +
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
