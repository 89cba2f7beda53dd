// The keys of the write path's locks that are not a customer, an order, an e-mail or a reward
// (src/write/load.ts lockKeysOf), with how they are taken (src/db/postgres/dialect.ts).

const PROGRAM = ':program'

/**
 * A shop's program: every batch of the shop takes it shared, and a rule change that starts keeping
 * the earnings the tiers count (src/repos/rule-repo.ts writeRuleIn) takes it alone, so no batch
 * decided under the rule before it commits after it.
 */
export const programLockKey = (shopId: number): string => `${shopId}${PROGRAM}`

/** Whether a key is taken shared. */
export const isSharedKey = (key: string): boolean => key.endsWith(PROGRAM)
