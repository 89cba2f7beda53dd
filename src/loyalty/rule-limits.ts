// The ranges of a points rule's numbers: the rule's schema (rule.ts) and the command line's
// messages (src/cli/rules.ts) both read them, without the command line loading the schema.

export const RATE_MIN = 0
export const RATE_MAX = 1_000_000
export const PENDING_DAYS_MIN = 0
export const PENDING_DAYS_MAX = 3650

/** The loyalty program's options (docs/program/loyalty-program.md). */
export const BONUS_POINTS_MAX = 1_000_000
export const TIERS_MAX = 20
export const TIER_NAME_MAX = 40
export const TIER_POINTS_MAX = 1_000_000_000_000
export const MULTIPLIER_MIN = 1
export const MULTIPLIER_MAX = 100
export const TIER_WINDOW_DAYS_MIN = 1
export const TIER_WINDOW_DAYS_MAX = 3650
export const TAGS_MAX = 50
export const TAG_MAX = 255
export const WARNING_DAYS_MAX = 365
/** Lead times of expiry warnings a rule may set (`30,7,1`). */
export const WARNING_LEADS_MAX = 3

/** Referrals (docs/program/referrals.md). */
export const REFERRAL_DAYS_MIN = 1
export const REFERRAL_DAYS_MAX = 3650
export const REFERRAL_CAP_MAX = 10_000
