import { addDays, daysBetween, daysOf, dayNumber, type LocalDate } from '../domain/calendar.ts'
import { fromMinor } from '../domain/money.ts'
import type { Reason } from './ledger-plan.ts'
import type { LedgerDaySum } from './points-report.ts'

// The program dashboard (docs/program/dashboard.md): every figure of a range of the shop's days,
// and of the period of equal length before it, folded from the rollups the write path keeps
// (ledger_days, dashboard_days, member_order_days) and the shop's referrals and claims, which the
// store only sums. Which reason is which source, what a repeat buyer and a qualified referral are,
// are decided here. Pure.

/** The most days one dashboard covers: a leap year. */
export const DASHBOARD_MAX_DAYS = 366
/** Without `from`, the dashboard starts this many days before `to`, which is included (the last 30 days). */
export const DASHBOARD_DEFAULT_DAYS = 30

/** Where issued points come from; later sources (activities, birthdays) join this list and the map below. */
export const ISSUED_SOURCES = ['orders', 'bonuses', 'referrals', 'imports', 'manual', 'activities', 'birthdays'] as const
export type IssuedSource = (typeof ISSUED_SOURCES)[number]

/**
 * Each ledger reason is one source of issued points, or redeemed (net of what was given back),
 * expired or reversed: so issued.total − redeemed − expired − reversed is the change in what is
 * outstanding, and each figure is a sum of the report's flows (src/loyalty/points-report.ts):
 * issued.total = earned + adjusted, redeemed = −(redeemed + given_back), expired = −expired,
 * reversed = −reversed. A new reason is one line here.
 */
export const POINTS_SOURCE_OF_REASON: Record<Reason, IssuedSource | 'redeemed' | 'expired' | 'reversed'> = {
  earned: 'orders',
  // A guest's order points, claimed by a customer; an order's re-pricing, its move to another customer, its tier's multiplier.
  claimed: 'orders',
  adjusted: 'orders',
  transferred: 'orders',
  tier_adjusted: 'orders',
  signup: 'bonuses',
  newsletter: 'bonuses',
  referral: 'referrals',
  import: 'imports',
  activity: 'activities',
  adjusted_manually: 'manual',
  birthday: 'birthdays',
  redeemed: 'redeemed',
  redemption_cancelled: 'redeemed',
  expired: 'expired',
  reversed_refund: 'reversed',
  reversed_cancel: 'reversed',
  forfeited: 'reversed',
  excluded: 'reversed',
}

/** A range of the shop's days, both ends included. */
export interface DayRange {
  from: LocalDate
  to: LocalDate
}

/** The dashboard's days from what was asked (`today` is the shop's, the default `to`), or what is wrong with it. */
export function parseDashboardRange(
  asked: { from?: string; to?: string },
  today: LocalDate,
  parse: (text: string) => LocalDate | undefined,
): DayRange | { problem: string } {
  const to = asked.to === undefined ? today : parse(asked.to)
  if (to === undefined || to < '1970-01-01') return { problem: `to must be a date YYYY-MM-DD from 1970-01-01 on, not ${JSON.stringify(asked.to)}` }
  const from = asked.from === undefined ? addDays(to, -(DASHBOARD_DEFAULT_DAYS - 1)) : parse(asked.from)
  if (from === undefined || from < '1970-01-01') return { problem: `from must be a date YYYY-MM-DD from 1970-01-01 on, not ${JSON.stringify(asked.from)}` }
  if (from > to) return { problem: `from (${from}) is after to (${to})` }
  const days = daysBetween(from, to) + 1
  if (days > DASHBOARD_MAX_DAYS) return { problem: `${from} to ${to} is ${days} days; a dashboard covers at most ${DASHBOARD_MAX_DAYS}` }
  return { from, to }
}

/** The period of equal length just before the range. */
export function previousRange(r: DayRange): DayRange {
  const days = daysBetween(r.from, r.to) + 1
  return { from: addDays(r.from, -days), to: addDays(r.from, -1) }
}

/** A row of dashboard_days summed by day, figure and key. */
export interface DashboardDaySum {
  day: LocalDate
  figure: string
  key: string
  n: number
  amount: number
}

/** Of the members with an order in a range, how many (buyers), and how many with two or more (repeaters). */
export interface RepeatCounts {
  buyers: number
  repeaters: number
}

/** The shop's referrals claimed in a range, counted by status and reason. */
export type ReferralCounts = { status: string; reason: string; n: number }[]

/** The shop's claims made in a range, by reward and whether they were cancelled since. */
export type ClaimCounts = { rewardId: number; name: string; cancelled: boolean; claims: number; points: number }[]

export interface DashboardInput {
  range: DayRange
  /** The report's rollup up to the end of `to` (days as numbers). */
  ledger: readonly LedgerDaySum[]
  /** dashboard_days up to the end of `to`. */
  days: readonly DashboardDaySum[]
  repeat: { current: RepeatCounts; previous: RepeatCounts }
  referrals: { current: ReferralCounts; previous: ReferralCounts }
  claims: ClaimCounts
  /** The tiers of the shop's program now, lowest first: the order tiers are listed in. */
  tierOrder: readonly string[]
}

type Issued = Record<IssuedSource | 'total', number>
type Revenue = { currency: string; members: string; guests: string }[]

function headline(input: DashboardInput, range: DayRange, repeat: RepeatCounts, referrals: ReferralCounts) {
  const inRange = (day: LocalDate) => range.from <= day && day <= range.to
  const [first, last] = [dayNumber(range.from), dayNumber(range.to)]
  let total = 0
  let joined = 0
  const orders = { count: 0, members: 0, guests: 0, earning: 0 }
  const revenue = new Map<string, { members: number; guests: number; orders: number }>()
  const moves = { up: 0, down: 0 }
  for (const d of input.days) {
    if (d.day > range.to) continue
    if (d.figure === 'members') {
      total += d.n
      if (inRange(d.day)) joined += d.n
    }
    if (!inRange(d.day)) continue
    if (d.figure === 'orders') {
      const [currency = '', member, earning] = d.key.split('|')
      orders.count += d.n
      orders[member === '1' ? 'members' : 'guests'] += d.n
      if (earning === '1') orders.earning += d.n
      if (currency !== '') {
        const r = revenue.get(currency) ?? { members: 0, guests: 0, orders: 0 }
        r[member === '1' ? 'members' : 'guests'] += d.amount
        r.orders += d.n
        revenue.set(currency, r)
      }
    }
    if (d.figure === 'moves' && (d.key === 'up' || d.key === 'down')) moves[d.key] += d.n
  }
  const issued: Issued = { orders: 0, bonuses: 0, referrals: 0, imports: 0, manual: 0, activities: 0, birthdays: 0, total: 0 }
  let redeemed = 0
  let expired = 0
  let reversed = 0
  let outstanding = 0
  for (const s of input.ledger) {
    if (s.day > last) continue
    outstanding += s.points
    if (s.day < first) continue
    const source = sourceOf(s.reason)
    if (source === 'redeemed') redeemed -= s.points
    else if (source === 'expired') expired -= s.points
    else if (source === 'reversed') reversed -= s.points
    else {
      issued[source] += s.points
      issued.total += s.points
    }
  }
  const { buyers, repeaters } = repeat
  return {
    from: range.from,
    to: range.to,
    members: { total, new: joined },
    orders,
    // A currency with no order left (its rows summed to none) is not listed.
    revenue: [...revenue]
      .filter(([, r]) => r.orders !== 0)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([currency, r]): Revenue[number] => ({ currency, members: fromMinor(r.members), guests: fromMinor(r.guests) })),
    repeat_rate: buyers === 0 ? null : repeaters / buyers,
    points: { issued, redeemed, expired, reversed, outstanding },
    redemption_rate: issued.total <= 0 ? null : Math.min(1, Math.max(0, redeemed / issued.total)),
    moves,
    referrals: referralFigures(referrals),
  }
}

const sourceOf = (reason: string) => {
  const source = POINTS_SOURCE_OF_REASON[reason as Reason]
  if (source === undefined) throw new Error(`a ledger entry with the unknown reason ${JSON.stringify(reason)}`)
  return source
}

/**
 * Of the referrals claimed in the range, as they stand now: claimed, all of them; qualified,
 * those whose friend's first order met the terms (rewarded, or refused only by the referrer's
 * monthly cap); rewarded; voided (the first order refunded or cancelled).
 */
function referralFigures(counts: ReferralCounts) {
  const out = { claimed: 0, qualified: 0, rewarded: 0, voided: 0 }
  for (const c of counts) {
    out.claimed += c.n
    if (c.status === 'rewarded' || (c.status === 'refused' && c.reason === 'cap_reached')) out.qualified += c.n
    if (c.status === 'rewarded') out.rewarded += c.n
    if (c.status === 'voided') out.voided += c.n
  }
  return out
}

/** The dashboard of the range, its series, and the same headline figures for the period before it. */
export function buildDashboard(input: DashboardInput) {
  const { range } = input
  const now = headline(input, range, input.repeat.current, input.referrals.current)
  const before = headline(input, previousRange(range), input.repeat.previous, input.referrals.previous)
  const tiers = new Map<string, number>()
  for (const d of input.days) if (d.figure === 'tier' && d.day <= range.to) tiers.set(d.key, (tiers.get(d.key) ?? 0) + d.n)
  const rank = (key: string) => (key === '' ? -1 : input.tierOrder.indexOf(key) === -1 ? input.tierOrder.length : input.tierOrder.indexOf(key))
  const claims = new Map<number, { reward_id: number; name: string; claims: number; points: number }>()
  for (const c of input.claims) {
    if (c.cancelled) continue
    const row = claims.get(c.rewardId) ?? { reward_id: c.rewardId, name: c.name, claims: 0, points: 0 }
    row.claims += c.claims
    row.points += c.points
    claims.set(c.rewardId, row)
  }
  const { moves, from, to, ...figures } = now
  const { moves: previousMoves, ...previous } = before
  return {
    from,
    to,
    ...figures,
    tiers: [...tiers]
      .filter(([key, n]) => n !== 0 || key === '')
      .sort(([a], [b]) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, members]) => ({ tier: key === '' ? null : key, members })),
    moves,
    claims: [...claims.values()].sort((a, b) => b.claims - a.claims || a.reward_id - b.reward_id),
    series: seriesOf(input),
    previous: { ...previous, moves: previousMoves },
  }
}

export type Dashboard = ReturnType<typeof buildDashboard>

/** One entry per day of the range. */
function seriesOf(input: DashboardInput) {
  const { from, to } = input.range
  const days = daysOf(from, to)
  const at = new Map(days.map((date, i) => [date, i]))
  const series = days.map((date) => ({
    date,
    orders: 0,
    revenue: new Map<string, { amount: number; orders: number }>(),
    new_members: 0,
    points_issued: 0,
    points_redeemed: 0,
  }))
  for (const d of input.days) {
    const i = at.get(d.day)
    if (i === undefined) continue
    const s = series[i]!
    if (d.figure === 'members') s.new_members += d.n
    if (d.figure === 'orders') {
      s.orders += d.n
      const currency = d.key.split('|')[0] ?? ''
      if (currency !== '') {
        const r = s.revenue.get(currency) ?? { amount: 0, orders: 0 }
        r.amount += d.amount
        r.orders += d.n
        s.revenue.set(currency, r)
      }
    }
  }
  const first = dayNumber(from)
  for (const l of input.ledger) {
    const s = series[l.day - first]
    if (s === undefined || l.day < first) continue
    const source = sourceOf(l.reason)
    if (source === 'redeemed') s.points_redeemed -= l.points
    else if (source !== 'expired' && source !== 'reversed') s.points_issued += l.points
  }
  return series.map((s) => ({
    ...s,
    revenue: [...s.revenue]
      .filter(([, r]) => r.orders !== 0)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([currency, r]) => ({ currency, amount: fromMinor(r.amount) })),
  }))
}

/** The series as CSV (RFC 4180): a header line, then one line per day; revenue a column per currency of the range. */
export function dashboardCsv(d: Pick<Dashboard, 'series' | 'revenue'>): string {
  const currencies = d.revenue.map((r) => r.currency)
  const header = ['date', 'orders', ...currencies.map((c) => `revenue_${c}`), 'new_members', 'points_issued', 'points_redeemed']
  const lines = d.series.map((s) => {
    const revenue = new Map(s.revenue.map((r) => [r.currency, r.amount]))
    return [s.date, s.orders, ...currencies.map((c) => revenue.get(c) ?? '0.00'), s.new_members, s.points_issued, s.points_redeemed].join(',')
  })
  return [header.join(','), ...lines].map((line) => `${line}\r\n`).join('')
}
