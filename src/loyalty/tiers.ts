import { ORDER_POINTS_MAX } from './points-limits.ts'
import { exclusionOf, optionsAt, tagTierIndex, type ProgramSchedule, type TagSet } from './program.ts'

// VIP tiers, decided from a customer's history, never from their balance: the tier at an instant
// is the highest whose threshold the base points (before any multiplier) of the customer's orders
// processed within the window before that instant reach, net of reversals, or the tier a tag puts
// them in if higher. Base points, so the multiplier never feeds itself; history, so spending
// never demotes and the order in which webhooks arrived does not matter. Pure.

const DAY_US = 86_400_000_000

/** An order's base points credited to a customer (order_earnings): what counts toward tiers. */
export interface Earning {
  orderId: number
  processedUs: number
  /** The order's points under the rule before any multiplier and exclusion; > 0. */
  base: number
}

/**
 * A tier a customer holds regardless of their points for a while: the tier an import brought
 * over from another platform, for one tier window from the import (src/batch/decide-import.ts).
 */
export interface TierFloor {
  name: string
  fromUs: number
  untilUs: number
}

export interface TierAt {
  /** The tier's index in the options in force at the instant, or -1 for none. */
  index: number
  name: string | null
  multiplier: number
  /** Base points counted toward it. */
  counted: number
  /** The tier is held only by the tier an import brought over (TierFloor): the points and tags reach a lower one. */
  imported: boolean
  windowDays: number
  /** The next tier above the one held, if any, and its threshold. */
  next: { name: string; points: number } | null
}

/** Whether an order of a customer with `tags`, processed at `atUs`, is excluded: the excluded tag, if so. */
export function excludedAt(schedule: ProgramSchedule, tags: TagSet, atUs: number): string | undefined {
  return exclusionOf(optionsAt(schedule, atUs), tags)
}

/**
 * The customer's tier at `atUs`, from their earnings: those processed in [atUs − window, atUs)
 * count, unless excluded at their own instant.
 */
export function tierAt(schedule: ProgramSchedule, tags: TagSet, earnings: Iterable<Earning>, atUs: number, floor: TierFloor | null = null): TierAt {
  return tiersAt(schedule, tags, earnings, [atUs], floor)[0]!
}

/**
 * The tier at each of `instants` (in the order given), in one pass: the earnings sorted once, and
 * a window sliding over them for the instants of each window length, so that pricing every order
 * of a customer costs the sort, not their count squared.
 */
export function tiersAt(
  schedule: ProgramSchedule,
  tags: TagSet,
  earnings: Iterable<Earning>,
  instants: readonly number[],
  floor: TierFloor | null = null,
): TierAt[] {
  const counted = sorted(schedule, tags, earnings)
  const out: TierAt[] = new Array(instants.length)
  const byWindow = new Map<number, number[]>()
  instants.forEach((atUs, i) => {
    const options = optionsAt(schedule, atUs)
    if (options.tiers.length === 0) {
      out[i] = { index: -1, name: null, multiplier: 1, counted: 0, windowDays: options.tier_window_days, next: null, imported: false }
      return
    }
    const list = byWindow.get(options.tier_window_days) ?? []
    list.push(i)
    byWindow.set(options.tier_window_days, list)
  })
  for (const [windowDays, indexes] of byWindow) {
    const windowUs = windowDays * DAY_US
    indexes.sort((a, b) => instants[a]! - instants[b]!)
    let lo = 0
    let hi = 0
    let sum = 0
    for (const i of indexes) {
      const atUs = instants[i]!
      while (hi < counted.length && counted[hi]!.processedUs < atUs) sum += counted[hi++]!.base
      while (lo < hi && counted[lo]!.processedUs < atUs - windowUs) sum -= counted[lo++]!.base
      out[i] = tierOf(optionsAt(schedule, atUs), tags, sum, windowDays, floor !== null && floor.fromUs <= atUs && atUs < floor.untilUs ? floor.name : null)
    }
  }
  return out
}

/** The earnings that count toward tiers (not excluded at their own instant), by processed_at. */
function sorted(schedule: ProgramSchedule, tags: TagSet, earnings: Iterable<Earning>): Earning[] {
  const out: Earning[] = []
  for (const e of earnings) if (!excludedAt(schedule, tags, e.processedUs)) out.push(e)
  return out.sort((a, b) => a.processedUs - b.processedUs)
}

function tierOf(options: ReturnType<typeof optionsAt>, tags: TagSet, counted: number, windowDays: number, floor: string | null): TierAt {
  let index = -1
  options.tiers.forEach((tier, i) => {
    if (tier.points <= counted) index = i
  })
  index = Math.max(index, tagTierIndex(options, tags))
  const floorIndex = floor === null ? -1 : options.tiers.findIndex((t) => t.name.toLowerCase() === floor.toLowerCase())
  const imported = floorIndex > index
  index = Math.max(index, floorIndex)
  const tier = options.tiers[index]
  const above = options.tiers[index + 1]
  return {
    index,
    name: tier?.name ?? null,
    multiplier: tier?.multiplier ?? 1,
    counted,
    windowDays,
    next: above ? { name: above.name, points: above.points } : null,
    imported,
  }
}

/** Base points × the multiplier, rounded down, computed exactly (2 decimals), capped as an order's points are. */
export function multiplied(base: number, multiplier: number): number {
  if (multiplier === 1) return base
  const m100 = Math.round(multiplier * 100)
  return Math.min(ORDER_POINTS_MAX, Math.floor((base * m100) / 100))
}

/**
 * The next instant after `nowUs` at which the tier can change with nothing but time: an order
 * entering the window at its processed_at or leaving it a window later. Null when none can.
 */
export function nextTierChangeUs(
  schedule: ProgramSchedule,
  tags: TagSet,
  earnings: Iterable<Earning>,
  nowUs: number,
  floor: TierFloor | null = null,
): number | null {
  const options = optionsAt(schedule, nowUs)
  if (options.tiers.length === 0) return null
  const windowUs = options.tier_window_days * DAY_US
  let next = Infinity
  // An imported tier starts and ends.
  if (floor !== null && floor.fromUs > nowUs) next = Math.min(next, floor.fromUs)
  if (floor !== null && floor.untilUs > nowUs) next = Math.min(next, floor.untilUs)
  for (const e of earnings) {
    if (excludedAt(schedule, tags, e.processedUs)) continue
    // It counts at t when t − window ≤ processed_at < t: from a microsecond after it, until a window after that.
    if (e.processedUs + 1 > nowUs) next = Math.min(next, e.processedUs + 1)
    if (e.processedUs + windowUs + 1 > nowUs) next = Math.min(next, e.processedUs + windowUs + 1)
  }
  return next === Infinity ? null : next
}

/**
 * The first instant after `nowUs`, up to `untilUs`, at which time alone (orders leaving the
 * window, an imported tier ending) puts the customer in a lower tier than the one they hold at
 * `nowUs`, and the tier they fall to (null: none); null when they hold none, or none falls by
 * then. Orders processed later than `nowUs` count as they enter the window, as the sweep counts
 * them. Earnings must be known within a window before `untilUs`.
 */
export function nextTierFall(
  schedule: ProgramSchedule,
  tags: TagSet,
  earnings: Iterable<Earning>,
  nowUs: number,
  untilUs: number,
  floor: TierFloor | null = null,
): { atUs: number; to: string | null } | null {
  const held = tierAt(schedule, tags, earnings, nowUs, floor)
  if (held.index < 0) return null
  const windowUs = held.windowDays * DAY_US
  const instants = new Set<number>()
  const consider = (atUs: number) => atUs > nowUs && atUs <= untilUs && instants.add(atUs)
  if (floor !== null) [floor.fromUs, floor.untilUs].forEach(consider)
  for (const e of earnings) {
    consider(e.processedUs + 1)
    consider(e.processedUs + windowUs + 1)
  }
  const sorted = [...instants].sort((a, b) => a - b)
  const tiers = tiersAt(schedule, tags, earnings, sorted, floor)
  const at = tiers.findIndex((t) => t.index < held.index)
  return at < 0 ? null : { atUs: sorted[at]!, to: tiers[at]!.name }
}
