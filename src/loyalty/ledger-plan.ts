import type { Basis, OwnerState, Target } from './points.ts'

// Which ledger entries bring an order's points to its target. Entries are
// only ever appended: a change is the difference, a reversal takes back
// exactly what is held (at the basis it was awarded on), and points held by
// someone who is no longer the owner move with a pair of entries.

export const REASONS = ['earned', 'adjusted', 'reversed_refund', 'reversed_cancel', 'forfeited', 'claimed', 'transferred'] as const

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
  /** The basis of the award(s) behind these points; taking them back repeats it. */
  basis?: Basis
}

export interface PlannedEntry extends Holder {
  points: number
  reason: Reason
  basis: Basis
}

const same = (a: Holder, b: Holder) => a.customerId === b.customerId && (a.customerId !== null || a.guestEmail === b.guestEmail)

const EMPTY_BASIS: Basis = { amount_minor: 0, currency: null, rate: '0', rule_version: 0, available_us: 0 }

/**
 * @param holdings what each holder holds of this order now, grouped by award date
 * @param lastAward the basis of the order's latest award, for holdings that carry none
 * @param erasing a customer being erased: what they held is forfeited
 */
export function planOrderEntries(
  holdings: readonly Holding[],
  owner: Owner,
  target: Target,
  lastAward: Basis | null,
  erasing: number | null = null,
): PlannedEntry[] {
  const entries: PlannedEntry[] = []
  const live = owner.state === 'customer' || owner.state === 'guest'
  const award = lastAward ?? target.basis ?? EMPTY_BASIS
  const basisOf = (h: Holding) => h.basis ?? award
  // Each group is taken back or moved at its own basis, so pending points leave pending and
  // available points leave available.
  const mine: Holding[] = []
  for (const h of holdings) {
    if (h.points === 0) continue
    if (live && same(h, owner)) {
      mine.push(h)
    } else if (live) {
      const reason: Reason = h.customerId === null ? 'claimed' : 'transferred'
      entries.push({ ...pick(h), points: -h.points, reason, basis: basisOf(h) })
      entries.push({ ...pick(owner), points: h.points, reason, basis: basisOf(h) })
      mine.push({ ...pick(owner), points: h.points, basis: basisOf(h) })
    } else {
      const reason: Reason = h.customerId !== null && h.customerId === erasing ? 'forfeited' : (target.reversal ?? 'adjusted')
      entries.push({ ...pick(h), points: -h.points, reason, basis: basisOf(h) })
    }
  }
  if (!live) return entries
  const held = mine.reduce((sum, h) => sum + h.points, 0)
  const diff = target.points - held
  if (diff > 0) entries.push({ ...pick(owner), points: diff, reason: held === 0 ? 'earned' : 'adjusted', basis: target.basis ?? award })
  if (diff < 0) {
    const reason: Reason = target.points === 0 && target.reversal ? target.reversal : 'adjusted'
    // The newest awards go first; an edit down keeps the new amount but the date of the award it reduces.
    let remaining = -diff
    for (const h of [...mine].sort((a, b) => basisOf(b).available_us - basisOf(a).available_us)) {
      if (remaining === 0 || h.points <= 0) continue
      const take = Math.min(h.points, remaining)
      const basis = target.points > 0 && target.basis ? { ...target.basis, available_us: basisOf(h).available_us } : basisOf(h)
      entries.push({ ...pick(owner), points: -take, reason, basis })
      remaining -= take
    }
    if (remaining > 0) entries.push({ ...pick(owner), points: -remaining, reason, basis: target.basis ?? award })
  }
  return entries
}

const pick = (h: Holder): Holder => ({ customerId: h.customerId, guestEmail: h.guestEmail })
