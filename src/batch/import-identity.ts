// Does each line of a points import name the customer its e-mail belongs to? Decided over the
// shop's stored customers before anything is written (docs/program/imports.md): a line whose id is a
// customer known by another e-mail would credit someone else, and a line of a new id with an
// e-mail a customer already holds would make a second customer with it. Pure.

/** What the operator said wins when a line's id and e-mail disagree with the stored customers. */
export const ON_MISMATCH = ['take-file', 'keep-stored'] as const
/**
 * `take-file`: the line is imported as written (its id gets the points; a new id is made with the
 * line's e-mail). `keep-stored`: the stored customers stay as they are and the line is left out.
 */
export type OnMismatch = (typeof ON_MISMATCH)[number]

/** A stored customer of the shop that a line names by id or by e-mail. */
export interface StoredIdentity {
  id: number
  /** The stored e-mail, lower-cased; null for none. */
  emailLower: string | null
  deleted: boolean
}

/** What a line needs of the check. */
export interface IdentityLine {
  line: number
  customerId: number
  email: string
}

/** A line whose id and e-mail disagree with the stored customers, and why, in the words of a file's problem. */
export interface IdentityMismatch {
  line: number
  customerId: number
  detail: string
}

/**
 * The lines, in file order, whose customer id and e-mail disagree with `stored` (every stored
 * customer whose id or e-mail a line names) or with an earlier line that makes a customer: a
 * known id with another e-mail, or a new id with an e-mail a live customer holds. E-mails compare
 * case-insensitively, as the service matches them. A deleted customer's line is skipped by the
 * import anyway, and holds no e-mail.
 */
export function identityMismatches(lines: readonly IdentityLine[], stored: readonly StoredIdentity[]): IdentityMismatch[] {
  const byId = new Map(stored.map((s) => [s.id, s]))
  // The lowest live id holding each e-mail (orders are credited to it too), then the customers the file makes.
  const holders = new Map<string, number>()
  for (const s of stored) {
    if (s.deleted || s.emailLower === null) continue
    const held = holders.get(s.emailLower)
    if (held === undefined || s.id < held) holders.set(s.emailLower, s.id)
  }
  const made = new Map<string, number>()
  const out: IdentityMismatch[] = []
  for (const l of lines) {
    const email = l.email.toLowerCase()
    const known = byId.get(l.customerId)
    if (known?.deleted) continue
    if (known) {
      if (known.emailLower !== null && known.emailLower !== email)
        out.push({ line: l.line, customerId: l.customerId, detail: `customer ${l.customerId} is known with another e-mail than ${l.email}` })
      continue
    }
    const holder = holders.get(email)
    const maker = made.get(email)
    if (holder !== undefined)
      out.push({
        line: l.line,
        customerId: l.customerId,
        detail: `${l.email} is the e-mail of customer ${holder}: this line of a new customer ${l.customerId} would make a second customer with it`,
      })
    else if (maker !== undefined)
      out.push({
        line: l.line,
        customerId: l.customerId,
        detail: `${l.email} is also on line ${maker}, of another new customer: this line would make a second customer with it`,
      })
    else made.set(email, l.line)
  }
  return out
}
