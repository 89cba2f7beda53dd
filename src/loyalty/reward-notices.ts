// "A reward is within reach" (reward.available, docs/program/loyalty-program.md): when a
// customer is told that their available points reach what a reward costs. The balance is the
// one the write path settles; this decides, from what was decided last time, whether that is
// news. Pure: the time is an argument.

const DAY_US = 86_400_000_000

/** No second reward.available for the same customer and reward within this many days of the last. */
export const NOTICE_THROTTLE_DAYS = 30

/** What is kept per customer and reward (reward_notices). */
export interface RewardNotice {
  /** Their balance has reached the points since it was last below them, and they were told (or the 30 days held it back). */
  reached: boolean
  /** When the last reward.available for them and this reward went out; null for never. */
  sentUs: number | null
}

export const NO_NOTICE: RewardNotice = { reached: false, sentUs: null }

/**
 * The notice after a customer's balance is settled at `nowUs`: `reaches`, their available points
 * are at least the reward's; `claimable`, the reward is one they may claim now (active, its tier
 * met, a code left). Reaching while claimable, from below, sends one (`send`), unless one went
 * out within NOTICE_THROTTLE_DAYS, which the reach then uses up all the same; reaching while not
 * claimable waits, and sends once it is; falling below arms the next.
 */
export function noticeStep(notice: RewardNotice, reaches: boolean, claimable: boolean, nowUs: number): { next: RewardNotice; send: boolean } {
  if (!reaches) return { next: notice.reached ? { ...notice, reached: false } : notice, send: false }
  if (notice.reached || !claimable) return { next: notice, send: false }
  const send = notice.sentUs === null || nowUs - notice.sentUs >= NOTICE_THROTTLE_DAYS * DAY_US
  return { next: { reached: true, sentUs: send ? nowUs : notice.sentUs }, send }
}
