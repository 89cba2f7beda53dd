import { exclusionOf, optionsAt, type ProgramOptions, type ProgramSchedule, type TagSet } from './program.ts'

// The sign-up and newsletter bonuses: each once per customer, a pure function of the customer's
// merged state and the program's schedule, so a redelivered, reordered or repeated webhook adds
// nothing, and the ledger appends only the difference (src/batch/decide-loyalty.ts).

export const BONUSES = ['signup', 'newsletter'] as const
export type Bonus = (typeof BONUSES)[number]

/** What a bonus holds or should hold: its points, on one availability date. */
export interface BonusHolding {
  points: number
  available_us: number
}

export interface BonusTarget extends BonusHolding {
  why: string
  /** Set when the target is zero because of a tag (`excluded`) or an erasure (`forfeited`); any other bonus taken back whole is `forfeited` too. */
  reversal?: 'forfeited' | 'excluded'
}

/** What the bonuses depend on in a customer. */
export interface BonusCustomer {
  deleted: boolean
  /** Ever deleted: a customer deleted and registered again earns no bonus twice. */
  erased: boolean
  /** Another customer of the shop was erased with this customer's e-mail: the same person, registered again. */
  emailErased: boolean
  /** created_at as an instant. */
  createdUs: number | null
  /** The earliest version of a webhook that said is_newsletter: true. */
  newsletterUs: number | null
  tags: TagSet
}

const FIELD: Record<Bonus, keyof Pick<ProgramOptions, 'signup_points' | 'newsletter_points'>> = {
  signup: 'signup_points',
  newsletter: 'newsletter_points',
}

/**
 * The bonus `bonus` of a customer. Sign-up: the points in force at the customer's created_at
 * (so a customer created before the option took effect earns nothing); newsletter: those in
 * force at the first webhook that said they subscribed (so one subscribed before earns nothing,
 * and subscribing again earns nothing more). Nothing for a customer deleted, ever deleted, or
 * whose e-mail an erased customer had, nor for one carrying an excluded tag at that instant.
 */
export function bonusTarget(bonus: Bonus, c: BonusCustomer, schedule: ProgramSchedule): BonusTarget {
  const atUs = bonus === 'signup' ? c.createdUs : c.newsletterUs
  const none = (why: string, reversal?: BonusTarget['reversal']): BonusTarget => ({
    points: 0,
    available_us: atUs ?? 0,
    why,
    ...(reversal ? { reversal } : {}),
  })
  if (c.deleted) return none('the customer was deleted; their points were forfeited', 'forfeited')
  if (c.erased) return none('the customer was deleted before: a bonus is earned once', 'forfeited')
  if (c.emailErased) return none("a deleted customer had this customer's e-mail: a bonus is earned once", 'forfeited')
  if (atUs === null) return none(bonus === 'signup' ? 'no created_at' : 'not subscribed')
  const options = optionsAt(schedule, atUs)
  const points = options[FIELD[bonus]]
  if (points === 0) return none(bonus === 'signup' ? 'no sign-up bonus when the customer registered' : 'no newsletter bonus when the customer subscribed')
  const excluded = exclusionOf(options, c.tags)
  if (excluded !== undefined) return none(`the customer carries the excluded tag ${excluded}`, 'excluded')
  return { points, available_us: atUs, why: bonus === 'signup' ? 'sign-up bonus' : 'newsletter bonus' }
}

/** An entry that brings a bonus to its target. */
export interface BonusEntry {
  points: number
  reason: Bonus | 'adjusted' | 'forfeited' | 'excluded'
  available_us: number
}

/**
 * The entries that make what a bonus holds equal its target: the first award under the bonus's
 * own reason, a reversal of all of it under the target's reason (`forfeited` when it gives none:
 * a customer whose created_at moved to before the bonus was offered loses all of it, as a deleted
 * one does, and the points report counts it `reversed`, as it counted the award `earned`), and a
 * change of amount or date as `adjusted` entries (what is held taken back on its date, the target
 * given on its own).
 */
export function planBonusEntries(bonus: Bonus, held: BonusHolding | null, target: BonusTarget): BonusEntry[] {
  const holds = held !== null && held.points !== 0
  if (target.points === 0) return holds ? [{ points: -held.points, reason: target.reversal ?? 'forfeited', available_us: held.available_us }] : []
  if (!holds) return [{ points: target.points, reason: bonus, available_us: target.available_us }]
  if (held.available_us === target.available_us) {
    return held.points === target.points ? [] : [{ points: target.points - held.points, reason: 'adjusted', available_us: held.available_us }]
  }
  return [
    { points: -held.points, reason: 'adjusted', available_us: held.available_us },
    { points: target.points, reason: 'adjusted', available_us: target.available_us },
  ]
}
