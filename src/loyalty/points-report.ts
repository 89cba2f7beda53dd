import { REASONS, type Reason } from './ledger-plan.ts'
import { REPORT_DEFAULT_DAYS, REPORT_MAX_BUCKETS } from './report-limits.ts'

// The points liability report: the customers' ledger folded into buckets of days (UTC), with what
// flowed in and out in each and what was outstanding at its end. The store only sums the ledger by
// the day an entry was written, the day it becomes available and its reason; which reason is which
// flow, and what a bucket is, are decided here.

export const REPORT_BUCKETS = ['day', 'week', 'month'] as const
export type ReportBucket = (typeof REPORT_BUCKETS)[number]

/** The flows, signed as they change the customers' points. */
export const REPORT_FLOWS = ['earned', 'reversed', 'redeemed', 'given_back', 'expired', 'adjusted'] as const
export type ReportFlow = (typeof REPORT_FLOWS)[number]

/** Every reason is exactly one flow, so that the flows of a bucket add up to the change in what is outstanding. */
export const FLOW_OF_REASON: Record<Reason, ReportFlow> = {
  earned: 'earned',
  // A guest's points, become a customer's: earned by them from then on.
  claimed: 'earned',
  reversed_refund: 'reversed',
  reversed_cancel: 'reversed',
  // An erased customer's order points, taken back.
  forfeited: 'reversed',
  redeemed: 'redeemed',
  redemption_cancelled: 'given_back',
  expired: 'expired',
  adjusted: 'adjusted',
  adjusted_manually: 'adjusted',
  // An order's points moving from one holder to another (its customer changed).
  transferred: 'adjusted',
  // The loyalty program: bonuses are earned; an excluded customer's points taken back; an order
  // re-priced at another tier's multiplier, adjusted.
  signup: 'earned',
  newsletter: 'earned',
  excluded: 'reversed',
  tier_adjusted: 'adjusted',
  // A referral's points are earned, as a bonus is; taken back as an order's are (reversed_refund, reversed_cancel, adjusted).
  referral: 'earned',
  // An action's points are earned, as a bonus is; their correction (a slot lost, a void) nets against them.
  activity: 'earned',
  // A balance carried over from another platform: a one-off booking, like an operator's, not what this program's orders earned.
  import: 'adjusted',
  // A birthday's points are earned, as a bonus's are.
  birthday: 'earned',
}

const DAY_MS = 86_400_000
/** The first day a report may name: the ledger holds nothing older. */
const FIRST_DAY = '1970-01-01'

/** A day as a number of days since 1970-01-01 (UTC). */
export type DayNumber = number

export function dayOf(text: string): DayNumber | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text) || text < FIRST_DAY) return undefined
  const ms = Date.parse(`${text}T00:00:00Z`)
  // Date.parse rolls 2026-02-30 over to March: a real day formats back to itself.
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== text) return undefined
  return ms / DAY_MS
}

export const formatDay = (day: DayNumber): string => new Date(day * DAY_MS).toISOString().slice(0, 10)

/** The day after the last of the bucket `day` is in. Weeks are ISO weeks, Monday to Sunday. */
function nextBucketStart(day: DayNumber, bucket: ReportBucket): DayNumber {
  if (bucket === 'day') return day + 1
  // 1970-01-01 was a Thursday: (day + 3) % 7 counts from Monday.
  if (bucket === 'week') return day - ((day + 3) % 7) + 7
  const date = new Date(day * DAY_MS)
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1) / DAY_MS
}

function bucketCount(from: DayNumber, to: DayNumber, bucket: ReportBucket): number {
  if (bucket === 'day') return to - from + 1
  if (bucket === 'week') return (to - ((to + 3) % 7) - (from - ((from + 3) % 7))) / 7 + 1
  const [a, b] = [new Date(from * DAY_MS), new Date(to * DAY_MS)]
  return (b.getUTCFullYear() - a.getUTCFullYear()) * 12 + b.getUTCMonth() - a.getUTCMonth() + 1
}

export interface ReportRange {
  from: DayNumber
  to: DayNumber
  bucket: ReportBucket
}

/** The report's days from what was asked (`today` is the default `to`), or what is wrong with it. */
export function parseReportRange(asked: { from?: string; to?: string; bucket?: string }, today: DayNumber): ReportRange | { problem: string } {
  const bucket = asked.bucket ?? 'day'
  if (!(REPORT_BUCKETS as readonly string[]).includes(bucket)) return { problem: `bucket must be day, week or month, not ${JSON.stringify(bucket)}` }
  const to = asked.to === undefined ? today : dayOf(asked.to)
  if (to === undefined) return { problem: `to must be a date YYYY-MM-DD from ${FIRST_DAY} on, not ${JSON.stringify(asked.to)}` }
  const from = asked.from === undefined ? Math.max(0, to - REPORT_DEFAULT_DAYS + 1) : dayOf(asked.from)
  if (from === undefined) return { problem: `from must be a date YYYY-MM-DD from ${FIRST_DAY} on, not ${JSON.stringify(asked.from)}` }
  if (from > to) return { problem: `from (${formatDay(from)}) is after to (${formatDay(to)})` }
  const count = bucketCount(from, to, bucket as ReportBucket)
  if (count > REPORT_MAX_BUCKETS)
    return { problem: `${formatDay(from)} to ${formatDay(to)} by ${bucket} is ${count} buckets; a report holds at most ${REPORT_MAX_BUCKETS}` }
  return { from, to, bucket: bucket as ReportBucket }
}

/** The sum of a shop's customers' entries written on `day` that become available on `availableDay`, for one reason. */
export interface LedgerDaySum {
  day: DayNumber
  availableDay: DayNumber
  reason: string
  points: number
}

export interface Outstanding {
  /** available + pending */
  outstanding: number
  /** points the customers could spend at the end of the day */
  available: number
  /** points written by then that become available later */
  pending: number
}

export type ReportRow = { start: string; end: string } & Record<ReportFlow, number> & Outstanding

export interface PointsReport {
  from: string
  to: string
  bucket: ReportBucket
  /** What was outstanding at the end of the day before `from`. */
  opening: Outstanding
  buckets: ReportRow[]
}

const flowOf = (reason: string): ReportFlow => {
  if (!(REASONS as readonly string[]).includes(reason)) throw new Error(`a ledger entry with the unknown reason ${JSON.stringify(reason)}`)
  return FLOW_OF_REASON[reason as Reason]
}

/** Folds the day sums (any order; days after `to` are ignored) into the range's buckets. */
export function buildReport(range: ReportRange, sums: readonly LedgerDaySum[]): PointsReport {
  const rows = [...sums].filter((s) => s.day <= range.to).sort((a, b) => a.day - b.day)
  let next = 0
  let outstanding = 0
  // Points written so far that are not yet available, by the day they become so.
  const later = new Map<DayNumber, number>()
  /** Takes in every sum written up to the end of `end`, each passed to `flow`; what is outstanding then. */
  const advance = (end: DayNumber, flow: (s: LedgerDaySum) => void): Outstanding => {
    while (next < rows.length && rows[next]!.day <= end) {
      const s = rows[next++]!
      outstanding += s.points
      later.set(s.availableDay, (later.get(s.availableDay) ?? 0) + s.points)
      flow(s)
    }
    let pending = 0
    for (const [day, points] of later) {
      if (day <= end) later.delete(day)
      else pending += points
    }
    return { outstanding, available: outstanding - pending, pending }
  }
  const opening = advance(range.from - 1, (s) => void flowOf(s.reason))
  const buckets: ReportRow[] = []
  for (let start = range.from; start <= range.to;) {
    const end = Math.min(nextBucketStart(start, range.bucket) - 1, range.to)
    const flows: Record<ReportFlow, number> = { earned: 0, reversed: 0, redeemed: 0, given_back: 0, expired: 0, adjusted: 0 }
    const balance = advance(end, (s) => (flows[flowOf(s.reason)] += s.points))
    buckets.push({ start: formatDay(start), end: formatDay(end), ...flows, ...balance })
    start = end + 1
  }
  return { from: formatDay(range.from), to: formatDay(range.to), bucket: range.bucket, opening, buckets }
}

/** The report's buckets as CSV (RFC 4180), a header line first. */
export function reportCsv(report: PointsReport): string {
  const columns = ['start', 'end', ...REPORT_FLOWS, 'outstanding', 'available', 'pending'] as const
  return [columns.join(','), ...report.buckets.map((row) => columns.map((c) => String(row[c])).join(','))].map((line) => `${line}\r\n`).join('')
}
