import type { Basis, OwnerState, Target } from './points.ts'

// Which ledger entries bring an order's points to its target. Entries are
// only ever appended: a change is the difference, a reversal takes back
// exactly what is held (at the basis it was awarded on), and points held by
// someone who is no longer the owner move with a pair of entries.

export const REASONS = [
  'earned',
  'adjusted',
  'reversed_refund',
  'reversed_cancel',
  'forfeited',
  'claimed',
  'transferred',
  'redeemed',
  'redemption_cancelled',
  'expired',
  'adjusted_manually',
  // The loyalty program (docs/program/loyalty-program.md).
  'signup',
  'newsletter',
  'excluded',
  'tier_adjusted',
  // Refer a friend (docs/program/referrals.md): a referrer's or a friend's points for a first order.
  'referral',
  // A balance brought over from another platform (points import).
  'import',
  // A customer's birthday, once a year (docs/program/birthdays.md).
  'birthday',
  // An action a shop reported (docs/program/activities.md): its points, and their correction when it loses its slot or is voided.
  'activity',
] as const

export type Reason = (typeof REASONS)[number]

/** A customer by numeric id, or a guest by lower-cased e-mail. */
export interface Holder {
  customerId: number | null
  guestEmail: string | null
}

export interface Owner extends Holder {
  state: OwnerState
}

/** What a holder holds of an order from awards that share one availability date. */
export interface Holding extends Holder {
  points: number
  /** The basis of the latest award behind these points; taking them back repeats it. */
  basis: Basis
}

export interface PlannedEntry extends Holder {
  points: number
  reason: Reason
  basis: Basis
}

export const sameHolder = (a: Holder, b: Holder) => a.customerId === b.customerId && (a.customerId !== null || a.guestEmail === b.guestEmail)

/**
 * The entries that make what an order holds equal its target: the owner holds
 * exactly `target.points`, all available on the target's date, and nobody else
 * holds anything. Points held by another holder move to the owner (claimed or
 * transferred); points held on another date move to the target's date; what
 * must go is taken back at the basis it was awarded on.
 *
 * @param holdings what each holder holds of this order now, grouped by availability date
 * @param forfeits true for a holder whose points are forfeited because they were erased
 */
export function planOrderEntries(
  holdings: readonly Holding[],
  owner: Owner,
  target: Target,
  forfeits: (holder: Holder) => boolean = () => false,
): PlannedEntry[] {
  const entries: PlannedEntry[] = []
  const live = owner.state === 'customer' || owner.state === 'guest'
  const award = live && target.points > 0 ? target.basis : null
  const ownerHeld = live && holdings.some((h) => h.points !== 0 && sameHolder(h, owner))
  // The owner's points are priced at another tier's multiplier than the target's: a re-pricing.
  const repriced = award !== null && holdings.some((h) => h.points > 0 && sameHolder(h, owner) && (h.basis.multiplier ?? '1') !== (award.multiplier ?? '1'))
  let kept = 0
  for (const h of holdings) {
    if (h.points === 0) continue
    if (award && sameHolder(h, owner)) {
      if (h.basis.available_us === award.available_us) {
        kept += h.points
        continue
      }
      // The order's date or the rule's pending period changed: the points follow the new date.
      entries.push({ ...pick(h), points: -h.points, reason: 'adjusted', basis: h.basis })
    } else if (award && !forfeits(h)) {
      const reason: Reason = h.customerId === null ? 'claimed' : 'transferred'
      entries.push({ ...pick(h), points: -h.points, reason, basis: h.basis })
      entries.push({ ...pick(owner), points: h.points, reason, basis: { ...h.basis, available_us: award.available_us } })
      kept += h.points
    } else {
      const reason: Reason = forfeits(h) ? 'forfeited' : (target.reversal ?? 'adjusted')
      entries.push({ ...pick(h), points: -h.points, reason, basis: h.basis })
    }
  }
  if (!award) return entries
  const diff = target.points - kept
  const change: Reason = repriced ? 'tier_adjusted' : 'adjusted'
  if (diff > 0) entries.push({ ...pick(owner), points: diff, reason: ownerHeld ? change : 'earned', basis: award })
  if (diff < 0) entries.push({ ...pick(owner), points: diff, reason: change, basis: award })
  return entries
}

const pick = (h: Holder): Holder => ({ customerId: h.customerId, guestEmail: h.guestEmail })
