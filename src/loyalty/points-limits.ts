// The ranges of points, chosen so that every number of points the service takes, writes or sums
// is an integer a double holds exactly (up to 2^53 − 1 = 9,007,199,254,740,991), with room to
// spare: the schemas, the points rule and the decider read them (docs/program/rules.md, Limits).

/** An operator's adjustment adds or takes at most this many points (422 past it). */
export const ADJUSTMENT_POINTS_MAX = 1_000_000_000
/** A redemption spends at most this many points (422 past it). */
export const REDEMPTION_POINTS_MAX = 1_000_000_000_000
/** An order earns at most this many points, whatever its amount and the rate. */
export const ORDER_POINTS_MAX = 1_000_000_000
/**
 * No adjustment or cancel takes a customer's points (available and pending) past this (409
 * points-limit): with it, no sequence of commands passes it, and a balance under it plus any one
 * operation stays far below 2^53.
 */
export const BALANCE_POINTS_MAX = 1_000_000_000_000
