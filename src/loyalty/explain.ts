import type { OrderRecord } from '../domain/merge.ts'
import { parseInstantUs } from '../domain/time.ts'
import { LedgerContext, ownerOf } from '../store/ledger-repo.ts'
import type { Backend } from '../store/dialect.ts'
import { orderHeld } from '../store/points-repo.ts'
import type { Statements } from '../store/statements.ts'
import { targetFor } from './points.ts'

export interface OrderPoints {
  held: number
  why: string
}

/**
 * What an order holds in the ledger, and why, from committed state. `st` must be compiled without
 * row locks (readStatements): a read that locked the owner's row would wait behind any write to it.
 */
export async function explainOrderPoints(backend: Backend, st: Statements, shopId: number, order: OrderRecord): Promise<OrderPoints> {
  const ctx = new LedgerContext(backend.reads, st)
  const owner = await ownerOf(ctx, shopId, order)
  const processedUs = order.processed_at === null ? null : (parseInstantUs(order.processed_at) ?? null)
  const target = targetFor(order, processedUs, await ctx.rule(shopId), owner.state)
  const held = await orderHeld(backend.db, shopId, order.id)
  const why =
    held === target.points
      ? target.why
      : `${target.why}; the rule has changed since the order last changed: it holds ${held} until it changes again or points rebuild runs`
  return { held, why }
}
