// What came of one attempt at an entry of a subscription: what the webhook sender stores and
// whether the subscription moves on (webhook-sender.ts).

export type Attempt =
  /** Acknowledged (2xx): the subscription moves on. */
  | { kind: 'delivered'; status: number }
  /** Not sent, for good (a Klaviyo entry of no customer, or an erased one): recorded, and the subscription moves on. */
  | { kind: 'skipped'; reason: string }
  /** Sent and refused for good (Klaviyo's 400): recorded, and the subscription moves on. */
  | { kind: 'refused'; status: number; error: string }
  /** Failed (an error status, no answer, a refused connection): tried again, after `retryAfterMs` when the answer asked for it. */
  | { kind: 'failed'; status: number | null; error: string; retryAfterMs?: number }
  /** Not attempted: the destination's account must wait this long first (Klaviyo's limits); nothing is recorded. */
  | { kind: 'paced'; waitMs: number }
