import type { Basis, OwnerState, Target } from './points.ts'

// Which ledger entries bring an order's points to its target. Entries are
// only ever appended: a change is the difference, a reversal takes back
// exactly what is held (at the basis it was awarded on), and points held by
// someone who is no longer the owner move with a pair of entries.

export type Reason = 'earned' | 'adjusted' | 'reversed_refund' | 'reversed_cancel' | 'forfeited' | 'claimed' | 'transferred'

export const REASONS: readonly Reason[] = ['earned', 'adjusted', 'reversed_refund', 'reversed_cancel', 'forfeited', 'claimed', 'transferred']

/** A customer by numeric id, or a guest by lower-cased e-mail. */
export interface Holder {
  customerId: number | null
  guestEmail: string | null
}

export interface Owner extends Holder {
  state: OwnerState
}

export interface Holding extends Holder {
  points: number
}

export interface PlannedEntry extends Holder {
  points: number
  reason: Reason
  basis: Basis
}

const same = (a: Holder, b: Holder) => a.customerId === b.customerId && (a.customerId !== null || a.guestEmail === b.guestEmail)

const EMPTY_BASIS: Basis = { amount_minor: 0, currency: null, rate: '0', rule_version: 0, available_us: 0 }

/**
 * @param holdings what each holder holds of this order now (sums of its entries)
 * @param lastAward the basis of the order's latest award, which reversals and transfers repeat
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
  let held = 0
  for (const h of holdings) {
    if (h.points === 0) continue
    if (live && same(h, owner)) {
      held += h.points
    } else if (live) {
      const reason: Reason = h.customerId === null ? 'claimed' : 'transferred'
      entries.push({ ...pick(h), points: -h.points, reason, basis: award })
      entries.push({ ...pick(owner), points: h.points, reason, basis: award })
      held += h.points
    } else {
      const reason: Reason = h.customerId !== null && h.customerId === erasing ? 'forfeited' : (target.reversal ?? 'adjusted')
      entries.push({ ...pick(h), points: -h.points, reason, basis: award })
    }
  }
  if (!live) return entries
  const diff = target.points - held
  if (diff > 0) entries.push({ ...pick(owner), points: diff, reason: held === 0 ? 'earned' : 'adjusted', basis: target.basis ?? award })
  if (diff < 0) entries.push({ ...pick(owner), points: diff, reason: target.points === 0 && target.reversal ? target.reversal : 'adjusted', basis: target.points > 0 && target.basis ? target.basis : award })
  return entries
}

const pick = (h: Holder): Holder => ({ customerId: h.customerId, guestEmail: h.guestEmail })
