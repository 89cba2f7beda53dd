// How fast this process sends to each Klaviyo account: within Klaviyo's published limits of the
// Create Event API, counted per account as Klaviyo counts them, in fixed windows (350 in a
// second, 3,500 in a minute), and not at all while Klaviyo asked to wait (a 429's Retry-After).
// An account is a private key: two subscriptions with one key share its windows. Each process
// counts alone; several processes that together go past a limit get Klaviyo's 429, whose
// Retry-After every subscription of the account in that process then waits for. Pure: the time
// is given, no timers.

export interface Window {
  ms: number
  max: number
}

/** Klaviyo's limits of POST /api/events (burst and steady), per account. */
export const KLAVIYO_LIMITS: readonly Window[] = [
  { ms: 1000, max: 350 },
  { ms: 60_000, max: 3500 },
]

interface Account {
  /** Per window: the window's start and the requests counted in it. */
  counts: { start: number; n: number }[]
  /** No request before this (a 429's Retry-After). */
  blockedUntil: number
}

export class KlaviyoPacer {
  private readonly accounts = new Map<string, Account>()

  constructor(private readonly limits: readonly Window[] = KLAVIYO_LIMITS) {}

  private account(id: string): Account {
    let a = this.accounts.get(id)
    if (!a) {
      a = { counts: this.limits.map(() => ({ start: 0, n: 0 })), blockedUntil: 0 }
      this.accounts.set(id, a)
    }
    return a
  }

  /**
   * 0 when a request to the account may go at `nowMs`, and counts it; else the ms to wait, and
   * nothing is counted.
   */
  take(id: string, nowMs: number): number {
    const a = this.account(id)
    // waitOf moves the account's windows to `nowMs` first: the count goes to the window now.
    const wait = this.waitOf(id, nowMs)
    if (wait > 0) return wait
    for (const c of a.counts) c.n++
    this.prune(nowMs)
    return 0
  }

  /** The ms a request to the account must wait at `nowMs` (0: none), counting nothing. */
  waitOf(id: string, nowMs: number): number {
    const a = this.accounts.get(id)
    if (!a) return 0
    if (a.blockedUntil > nowMs) return a.blockedUntil - nowMs
    let wait = 0
    this.limits.forEach((w, i) => {
      const c = a.counts[i]!
      // Fixed windows on the epoch, as Klaviyo counts: a new window starts from nothing.
      const start = nowMs - (nowMs % w.ms)
      if (c.start !== start) {
        c.start = start
        c.n = 0
      }
      if (c.n >= w.max) wait = Math.max(wait, start + w.ms - nowMs)
    })
    return wait
  }

  /** Klaviyo asked the account to wait until `untilMs` (a 429): no request of it before then. */
  block(id: string, untilMs: number): void {
    const a = this.account(id)
    a.blockedUntil = Math.max(a.blockedUntil, untilMs)
  }

  /** Accounts known: an account whose windows and wait are all over is forgotten. */
  get size(): number {
    return this.accounts.size
  }

  private prune(nowMs: number) {
    if (this.accounts.size < 1000) return
    const longest = Math.max(...this.limits.map((w) => w.ms))
    for (const [id, a] of this.accounts) if (a.blockedUntil <= nowMs && a.counts.every((c) => c.start + longest <= nowMs)) this.accounts.delete(id)
  }
}
