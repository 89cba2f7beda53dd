// Which subscription the webhook sender serves next, fairly: between shops (round robin, so one
// shop's thousands of subscriptions do not queue ahead of another shop's one) and between
// endpoints that answer and those that do not. Two pools of slots: `steady`, for subscriptions
// whose last attempt went well, and `struggling`, for those retrying a failure (a timeout, a
// refusal, an error status). A struggling endpoint never takes a steady slot, and a steady
// delivery that has waited long for its answer (`slow`) gives its steady slot back and counts as
// struggling from then on, so endpoints that hang hold no slot a healthy one needs for longer
// than that. Pure: no clock, no I/O; the sender says what happened.

export type Pool = 'steady' | 'struggling'

export interface Candidate {
  id: number
  shopId: number
  /** Its last attempt failed: it is retrying. */
  struggling: boolean
}

/** One pool's line: a queue per shop, and the shops in turn. */
class Line {
  private readonly byShop = new Map<number, number[]>()
  /** Shops with a subscription waiting, in the order their turn comes. */
  private readonly turns: number[] = []

  push(c: Candidate) {
    const queue = this.byShop.get(c.shopId)
    if (queue) queue.push(c.id)
    else {
      this.byShop.set(c.shopId, [c.id])
      this.turns.push(c.shopId)
    }
  }

  /** The next shop's first subscription; the shop goes to the back of the turns. */
  shift(): number | undefined {
    const shopId = this.turns.shift()
    if (shopId === undefined) return undefined
    const queue = this.byShop.get(shopId)!
    const id = queue.shift()!
    if (queue.length > 0) this.turns.push(shopId)
    else this.byShop.delete(shopId)
    return id
  }

  clear() {
    this.byShop.clear()
    this.turns.length = 0
  }
}

export class DeliveryQueue {
  private readonly lines = { steady: new Line(), struggling: new Line() }
  /** Subscriptions in a line or being served: each is in one place at a time. */
  private readonly known = new Set<number>()
  /** Subscriptions being served, by the pool whose slot they hold. */
  private readonly serving = new Map<number, Pool>()
  private readonly used = { steady: 0, struggling: 0 }

  constructor(private readonly slots: Readonly<Record<Pool, number>>) {}

  /** Puts a due subscription in its pool's line, unless it is in one or being served already. */
  offer(c: Candidate): void {
    if (this.known.has(c.id)) return
    this.known.add(c.id)
    this.lines[c.struggling ? 'struggling' : 'steady'].push(c)
  }

  /** The next subscription to serve, taking its slot: a steady one first, while steady slots are free, then a struggling one. */
  take(): { id: number; pool: Pool } | undefined {
    for (const pool of ['steady', 'struggling'] as const) {
      if (this.used[pool] >= this.slots[pool]) continue
      const id = this.lines[pool].shift()
      if (id === undefined) continue
      this.used[pool]++
      this.serving.set(id, pool)
      return { id, pool }
    }
    return undefined
  }

  /** A steady delivery has waited long for its answer: its steady slot is free, and it counts as struggling until it is done. */
  slow(id: number): void {
    if (this.serving.get(id) !== 'steady') return
    this.serving.set(id, 'struggling')
    this.used.steady--
    this.used.struggling++
  }

  /** Served: its slot is free, and it may be offered again. */
  done(id: number): void {
    const pool = this.serving.get(id)
    if (pool === undefined) return
    this.serving.delete(id)
    this.known.delete(id)
    this.used[pool]--
  }

  /** Subscriptions being served now. */
  get busy(): number {
    return this.serving.size
  }

  /** Slots held, by pool. */
  get held(): Readonly<Record<Pool, number>> {
    return { ...this.used }
  }

  /** Empties the lines (stopping); those being served finish and are done. */
  clear(): void {
    for (const line of Object.values(this.lines)) line.clear()
    for (const id of this.known) if (!this.serving.has(id)) this.known.delete(id)
  }
}
