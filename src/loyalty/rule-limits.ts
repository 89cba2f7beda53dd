// The ranges of a points rule's numbers: the rule's schema (rule.ts) and the command line's
// messages (src/cli/rules.ts) both read them, without the command line loading the schema.

export const RATE_MIN = 0
export const RATE_MAX = 1_000_000
export const PENDING_DAYS_MIN = 0
export const PENDING_DAYS_MAX = 3650
