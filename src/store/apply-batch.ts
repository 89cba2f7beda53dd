import type { CustomerRecord, OrderRecord } from '../domain/merge.ts'
import { formatUs } from '../domain/time.ts'
import type { Change, Outcome, Status, Webhook } from '../domain/webhook.ts'
import type { Backend, Params, Session } from './dialect.ts'
import { claimGuestOrders, eraseCustomer, LedgerContext, REDACTED_BODY, settleOrder } from './ledger-repo.ts'
import { toOrder } from './read-repo.ts'
import type { Statements } from './statements.ts'
import { isConflict, isUnavailable } from './unavailable.ts'

// The write path: every webhook of a batch, its event row and its effects,
// in one transaction. The caller answers no webhook before this resolves.

export type BatchResult = Outcome | { status: 'failed'; error: Error }

const flag = (value: boolean | null) => (value === null ? null : value ? 1 : 0)

function customerParams(shopId: number, c: CustomerRecord): Params {
  return {
    ...c,
    shop_id: shopId,
    email_lower: c.email?.toLowerCase() ?? null,
    is_newsletter: flag(c.is_newsletter),
    tags: c.tags === null ? null : JSON.stringify(c.tags),
    deleted: c.deleted ? 1 : 0,
  }
}

function orderParams(shopId: number, o: OrderRecord): Params {
  return {
    ...o,
    shop_id: shopId,
    email_lower: o.email?.toLowerCase() ?? null,
    is_fulfilled: flag(o.is_fulfilled),
    is_refunded: flag(o.is_refunded),
    is_paid: flag(o.is_paid),
  }
}

interface Applied {
  status: Status
  /** The webhook carried personal data of an erased customer: store its body redacted. */
  redact: boolean
}

async function applyCustomer(ctx: LedgerContext, shopId: number, customer: CustomerRecord): Promise<Applied> {
  const { s, st } = ctx
  let erasedEmail: string | null = null
  if (customer.deleted) {
    const [before] = await s.all(st.customerById, { shop_id: shopId, id: customer.id })
    erasedEmail = (before?.email_lower as string | null | undefined) ?? null
  }
  const rows = await s.all(st.customerUpsert, customerParams(shopId, customer))
  const applied = rows.length > 0
  if (customer.deleted) {
    // Stale or not, a delete erases the data that predates it.
    await s.all(st.raiseErased, { shop_id: shopId, id: customer.id, erased_us: customer.version_us })
    await eraseCustomer(ctx, shopId, customer.id, customer.version_us, applied ? { emailLower: erasedEmail } : null)
    return { status: applied ? 'applied' : 'stale', redact: applied }
  }
  if (!applied) return { status: 'stale', redact: false }
  const email = rows[0]!.email_lower as string | null
  if (email) await claimGuestOrders(ctx, shopId, email)
  return { status: 'applied', redact: false }
}

async function applyChange(ctx: LedgerContext, shopId: number, change: Change): Promise<Applied> {
  if (change.kind === 'customer') return applyCustomer(ctx, shopId, change.customer)
  const { s, st } = ctx
  if (change.customer) await applyCustomer(ctx, shopId, change.customer)
  const statement = change.order.updated_us === null ? st.orderUpsertUndated : st.orderUpsertDated
  const rows = await s.all(statement, orderParams(shopId, change.order))
  if (rows.length === 0) return { status: 'stale', redact: false }
  const order = toOrder(rows[0] as never)
  const owner = await settleOrder(ctx, shopId, order)
  if (owner.state !== 'deleted') return { status: 'applied', redact: false }
  // The order belongs to an erased customer: keep no e-mail and no raw body of it.
  await s.all(st.eraseOrderEmail, { shop_id: shopId, order_id: order.id })
  await s.all(st.redactOrderEvents, { shop_id: shopId, order_id: order.id, body: REDACTED_BODY })
  return { status: 'applied', redact: true }
}

async function isErased(ctx: LedgerContext, shopId: number, customerId: number | null): Promise<boolean> {
  if (customerId === null) return false
  const [row] = await ctx.s.all(ctx.st.customerById, { shop_id: shopId, id: customerId })
  return Boolean(row?.deleted)
}

async function applyOne(ctx: LedgerContext, w: Webhook): Promise<Outcome> {
  const { s, st } = ctx
  let status: Status = 'rejected'
  let duplicateOf: string | null = null
  let body = w.body
  if (w.change) {
    const claimed = await s.all(st.dedupInsert, { shop_id: w.shopId, key: w.dedupKey, event_id: w.eventId })
    if (claimed.length === 0) {
      const [first] = await s.all(st.dedupFind, { shop_id: w.shopId, key: w.dedupKey })
      status = 'duplicate'
      duplicateOf = first!.event_id as string
    } else {
      const applied = await applyChange(ctx, w.shopId, w.change)
      status = applied.status
      if (applied.redact) body = REDACTED_BODY
    }
    // A redelivery, or a stale copy, about a customer erased since must not bring their data back.
    if (status !== 'applied' && body !== REDACTED_BODY && (await isErased(ctx, w.shopId, w.customerId))) body = REDACTED_BODY
  }
  await s.all(st.eventInsert, {
    id: w.eventId,
    shop_id: w.shopId,
    topic: w.topic,
    resource_id: w.resourceId,
    customer_id: w.customerId,
    received_at: formatUs(w.receivedUs),
    received_us: w.receivedUs,
    body,
    headers: w.headers,
    outcome: status,
    duplicate_of: duplicateOf,
    errors: w.errors === null ? null : JSON.stringify(w.errors),
  })
  return { status, eventId: duplicateOf ?? w.eventId }
}

/** How often a key's last_used_at is written: often enough for operators, rare enough that concurrent batches do not queue on the key's row. */
const TOUCH_EVERY_MS = 10_000

async function touchKeys(s: Session, st: Statements, batch: readonly Webhook[], touched: Map<number, number>): Promise<void> {
  const now = Date.now()
  for (const keyId of new Set(batch.map((w) => w.keyId))) {
    if (now - (touched.get(keyId) ?? 0) < TOUCH_EVERY_MS) continue
    touched.set(keyId, now)
    await s.all(st.keyTouch, { now: new Date(now).toISOString(), key_id: keyId })
  }
}

const MAX_ATTEMPTS = 4

/**
 * Applies a batch in one transaction. If the database refuses one webhook,
 * the batch is retried with a savepoint around each, so that only the
 * webhook at fault fails. A failure to reach the database rejects.
 */
export function batchApplier(backend: Backend, st: Statements): (batch: readonly Webhook[]) => Promise<BatchResult[]> {
  const touched = new Map<number, number>()
  return (batch) => applyBatch(backend, st, batch, touched)
}

async function applyBatch(backend: Backend, st: Statements, batch: readonly Webhook[], touched: Map<number, number>): Promise<BatchResult[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await backend.transaction(async (s) => {
        const results: BatchResult[] = []
        const ctx = new LedgerContext(s, st)
        for (const w of batch) results.push(await applyOne(ctx, w))
        await touchKeys(s, st, batch, touched)
        return results
      })
    } catch (err) {
      if (isUnavailable(err)) throw err
      // Concurrent batches that touched the same rows in another order: the whole batch runs again.
      if (isConflict(err) && attempt < MAX_ATTEMPTS) continue
      break
    }
  }
  return backend.transaction(async (s) => {
    const results: BatchResult[] = []
    const ctx = new LedgerContext(s, st)
    for (const w of batch) {
      await s.exec('SAVEPOINT webhook')
      try {
        results.push(await applyOne(ctx, w))
        await s.exec('RELEASE SAVEPOINT webhook')
      } catch (error) {
        if (isUnavailable(error)) throw error
        await s.exec('ROLLBACK TO SAVEPOINT webhook')
        results.push({ status: 'failed', error: error as Error })
      }
    }
    await touchKeys(s, st, batch, touched)
    return results
  })
}
