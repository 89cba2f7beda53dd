// The points liability report's bounds (src/loyalty/points-report.ts), apart so that the schemas,
// and the console through them, take them without the rules.

/** The most buckets one report holds: a leap year by day fits, and so do 19 years by week or 83 by month. */
export const REPORT_MAX_BUCKETS = 1000
/** Without `from`, a report starts this many days before `to` (the last 30 days). */
export const REPORT_DEFAULT_DAYS = 30
