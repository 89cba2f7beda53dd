// Expiry warnings at several lead times (docs/program/loyalty-program.md, Expiry warnings): which
// one, if any, is due for an expiry date now. Pure: times are arguments.

const DAY_US = 86_400_000_000

/**
 * The lead time (days) to warn of an expiry date at, `untilUs` before it, under the lead times
 * `leads`; null when none is due or it was warned of already. Due are the lead times the date is
 * within (`untilUs` ≤ days): of several due at once (points imported five days before they expire
 * under 30,7,1) only the nearest. `warned` is the nearest lead time the date was warned of at
 * before (undefined: never; null: at one not known, before lead times were kept): only a nearer
 * one follows it, so each goes out once, and a rule changed between never brings a farther
 * warning after a nearer one.
 */
export function leadTimeDue(leads: readonly number[], untilUs: number, warned: number | null | undefined): number | null {
  let nearest: number | null = null
  for (const days of leads) if (untilUs <= days * DAY_US && (nearest === null || days < nearest)) nearest = days
  if (nearest === null) return null
  if (warned === undefined || warned === null) return nearest
  return nearest < warned ? nearest : null
}
