import type { OrderRecord } from '../domain/merge.ts'
import { fromMinor } from '../domain/money.ts'
import { ORDER_POINTS_MAX } from './points-limits.ts'
import type { VersionedRule } from './rule.ts'

// An order's points are a pure function of its merged state, its owner and
// the shop's rule. The ledger appends the difference between this target and
// what the order already holds, so duplicates and reorderings add nothing.

const DAY_US = 86_400_000_000

/** What an award was computed from; reversals and transfers repeat the award's basis. */
export interface Basis {
  amount_minor: number
  currency: string | null
  /** Points per whole currency unit, as a decimal string. */
  rate: string
  rule_version: number
  available_us: number
  /** The VIP tier's multiplier the base points were multiplied by, as a decimal string; absent: 1. */
  multiplier?: string
}

export interface Target {
  points: number
  /** Null when nothing is earned. */
  basis: Basis | null
  /** Why the order holds what it holds, for people. */
  why: string
  /** Set when the target is zero because the order was reversed. */
  reversal?: 'reversed_refund' | 'reversed_cancel' | 'forfeited' | 'excluded'
}

export type OwnerState = 'customer' | 'guest' | 'deleted' | 'none'

/** Points for `amountMinor` at `rate` points per whole unit, rounded down, computed exactly. */
export function pointsFor(amountMinor: number, rate: number): number {
  if (amountMinor <= 0 || rate <= 0) return 0
  const rateE4 = BigInt(Math.round(rate * 10_000))
  return Number((BigInt(amountMinor) * rateE4) / 1_000_000n)
}

function rateFor(order: OrderRecord, { rule }: VersionedRule): { rate: number } | { why: string } {
  const listed = Object.keys(rule.currency_rates).length > 0
  if (!listed) return { rate: rule.points_per_unit }
  if (order.currency === null) return { why: 'the order has no currency, and the rule lists the currencies that earn' }
  const rate = rule.currency_rates[order.currency]
  if (rate === undefined) return { why: `currency ${order.currency} has no rate` }
  if (rate === 0) return { why: `currency ${order.currency} earns no points (rate 0)` }
  return { rate }
}

/** The base amount in minor units under the rule: subtotal, less the gift card, plus shipping and tax if chosen. */
export function earningAmount(order: OrderRecord, { rule }: VersionedRule): number | null {
  if (order.subtotal === null) return null
  let amount = order.subtotal
  if (rule.exclude_giftcard) amount -= order.amount_giftcard ?? 0
  if (rule.include_shipping) amount += order.amount_shipping ?? 0
  if (rule.include_tax) amount += order.amount_tax ?? 0
  return Math.max(0, amount)
}

/**
 * When points earned by this order become available: its current processed_at (or its first
 * arrival) plus the rule's pending window, so the date follows the order, not its history.
 */
export function availableUs(order: OrderRecord, { rule }: VersionedRule): number {
  return (order.processed_us ?? order.first_arrival_us) + rule.pending_days * DAY_US
}

export function targetFor(order: OrderRecord, versioned: VersionedRule, owner: OwnerState): Target {
  const zero = (why: string, reversal?: Target['reversal']): Target => ({ points: 0, basis: null, why, ...(reversal ? { reversal } : {}) })
  if (order.is_refunded) return zero('refunded', 'reversed_refund')
  if (order.cancelled_at !== null) return zero('cancelled', 'reversed_cancel')
  if (owner === 'deleted') return zero('the customer was deleted; their points were forfeited', 'forfeited')
  if (owner === 'none') return zero('no customer or e-mail to credit')
  const earnOn = versioned.rule.earn_on
  if (earnOn === 'paid' && !order.is_paid) return zero('not paid yet')
  if (earnOn === 'fulfilled' && !order.is_fulfilled) return zero('not fulfilled yet')
  const rate = rateFor(order, versioned)
  if ('why' in rate) return zero(rate.why)
  const amount = earningAmount(order, versioned)
  if (amount === null) return zero('the order has no subtotal')
  const exact = pointsFor(amount, rate.rate)
  const points = Math.min(exact, ORDER_POINTS_MAX)
  const basis: Basis = {
    amount_minor: amount,
    currency: order.currency,
    rate: String(rate.rate),
    rule_version: versioned.version,
    available_us: availableUs(order, versioned),
  }
  if (points === 0) return zero(`${fromMinor(amount)} ${order.currency ?? ''} is below one point at ${rate.rate} per unit`.replace('  ', ' '))
  const capped = exact > ORDER_POINTS_MAX ? `, capped: an order earns at most ${ORDER_POINTS_MAX} points` : ''
  return {
    points,
    basis,
    why: `${earnOn} order: ${fromMinor(amount)} ${order.currency ?? ''} at ${rate.rate} point${rate.rate === 1 ? '' : 's'} per unit (rule v${versioned.version})${capped}`.replace(
      '  ',
      ' ',
    ),
  }
}
