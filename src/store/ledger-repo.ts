import type { OrderRecord } from '../domain/merge.ts'
import { formatUs, parseInstantUs } from '../domain/time.ts'
import { planOrderEntries, type Holding, type Owner } from '../loyalty/ledger-plan.ts'
import { targetFor, type Basis } from '../loyalty/points.ts'
import { parseStoredRule, type VersionedRule } from '../loyalty/rule.ts'
import type { Session } from './dialect.ts'
import { toOrder } from './read-repo.ts'
import type { Statements } from './statements.ts'
import type { OrdersTable } from './tables.ts'

// The points ledger, written inside the transaction of the webhook that
// changed the order: never by a later job that could be lost.

/** State shared by the webhooks of one transaction. */
export class LedgerContext {
  private readonly rules = new Map<number, VersionedRule>()

  constructor(
    readonly s: Session,
    readonly st: Statements,
  ) {}

  async rule(shopId: number): Promise<VersionedRule> {
    let rule = this.rules.get(shopId)
    if (!rule) {
      const [row] = await this.s.all(this.st.shopRule, { shop_id: shopId })
      rule = { rule: parseStoredRule((row?.rule as string | null) ?? null), version: Number(row?.rule_version ?? 1) }
      this.rules.set(shopId, rule)
    }
    return rule
  }
}

export const REDACTED_BODY = Buffer.from('{"redacted":"personal data erased when the customer was deleted"}')

/** Who is credited with an order: its embedded customer, else the shop's customer with its e-mail, else a guest. */
export async function ownerOf(ctx: LedgerContext, shopId: number, order: OrderRecord): Promise<Owner> {
  const none = { customerId: null, guestEmail: null }
  if (order.customer_id !== null) {
    const [row] = await ctx.s.all(ctx.st.customerById, { shop_id: shopId, id: order.customer_id })
    if (row) {
      // Linked by a snapshot no newer than a delete: the order belongs to the erased customer, even
      // if they have registered again since (whichever of the two arrived first).
      const erased = row.erased_us as number | null
      const snapshotErased = erased !== null && order.customer_snapshot_us !== null && order.customer_snapshot_us <= erased
      return { state: row.deleted || snapshotErased ? 'deleted' : 'customer', customerId: order.customer_id, guestEmail: null }
    }
  }
  const email = order.email?.toLowerCase()
  if (!email) return { state: 'none', ...none }
  let match: number | undefined
  for (const row of await ctx.s.all(ctx.st.customersByEmail, { shop_id: shopId, email_lower: email })) {
    if (!row.deleted && (match === undefined || (row.id as number) < match)) match = row.id as number
  }
  if (match !== undefined) return { state: 'customer', customerId: match, guestEmail: null }
  return { state: 'guest', customerId: null, guestEmail: email }
}

/** Appends the entries that bring the order's points to its target; returns the order's owner. */
export async function settleOrder(ctx: LedgerContext, shopId: number, order: OrderRecord, erasing: number | null = null): Promise<Owner> {
  return (await settleOrderCounting(ctx, shopId, order, erasing)).owner
}

/** settleOrder, also telling how many entries it appended. */
export async function settleOrderCounting(
  ctx: LedgerContext,
  shopId: number,
  order: OrderRecord,
  erasing: number | null = null,
): Promise<{ owner: Owner; appended: number }> {
  const owner = await ownerOf(ctx, shopId, order)
  const rule = await ctx.rule(shopId)
  const rows = await ctx.s.all(ctx.st.ledgerForOrder, { shop_id: shopId, order_id: order.id })
  // Holdings per holder and award date, each with the basis of its latest award.
  const holdings = new Map<string, Holding>()
  let lastAward: Basis | null = null
  for (const row of rows) {
    const customerId = row.customer_id as number | null
    const guestEmail = row.guest_email as string | null
    const basis: Basis = {
      amount_minor: row.amount_minor as number,
      currency: row.currency as string | null,
      rate: row.rate as string,
      rule_version: row.rule_version as number,
      available_us: row.available_us as number,
    }
    const key = `${customerId !== null ? `c${customerId}` : `g${guestEmail}`}|${basis.available_us}`
    const holding = holdings.get(key) ?? { customerId, guestEmail, points: 0, basis }
    holding.points += row.points as number
    if ((row.points as number) > 0) {
      holding.basis = basis
      lastAward = basis
    }
    holdings.set(key, holding)
  }
  const processedUs = order.processed_at === null ? null : (parseInstantUs(order.processed_at) ?? null)
  const target = targetFor(order, processedUs, rule, owner.state)
  const createdAt = new Date().toISOString()
  const entries = planOrderEntries([...holdings.values()], owner, target, lastAward, erasing)
  for (const entry of entries) {
    await ctx.s.all(ctx.st.ledgerInsert, {
      shop_id: shopId,
      order_id: order.id,
      customer_id: entry.customerId,
      guest_email: entry.guestEmail,
      points: entry.points,
      reason: entry.reason,
      ...entry.basis,
      created_at: createdAt,
      available_at: formatUs(entry.basis.available_us),
    })
  }
  return { owner, appended: entries.length }
}

/**
 * A customer with this e-mail registered or changed: the points of guest
 * orders under it move to them. Guest orders holding nothing need no entry;
 * their owner is found by e-mail whenever they change.
 */
export async function claimGuestOrders(ctx: LedgerContext, shopId: number, emailLower: string): Promise<void> {
  const held = new Map<number, number>()
  for (const row of await ctx.s.all(ctx.st.guestEntries, { shop_id: shopId, email_lower: emailLower })) {
    held.set(row.order_id as number, (held.get(row.order_id as number) ?? 0) + (row.points as number))
  }
  for (const [orderId, points] of held) {
    if (points === 0) continue
    const [row] = await ctx.s.all(ctx.st.orderById, { shop_id: shopId, id: orderId })
    if (row) await settleOrder(ctx, shopId, toOrder(row as never))
  }
}

/**
 * Right to erasure: the e-mail on the customer's orders and the raw bodies of
 * their webhooks are erased; what they held is forfeited with ledger entries
 * that stay under the numeric id.
 *
 * A delete that arrives after a newer registration (stale) still erases what
 * predates it: the orders linked by an older snapshot of the customer. So the
 * result does not depend on which arrived first. Their newer data is kept.
 */
export async function eraseCustomer(
  ctx: LedgerContext,
  shopId: number,
  customerId: number,
  deleteVersionUs: number,
  applied: { emailLower: string | null } | null,
): Promise<void> {
  const orders = await ctx.s.all(ctx.st.ordersLinkedBefore, { shop_id: shopId, customer_id: customerId, version_us: deleteVersionUs })
  if (applied?.emailLower) {
    const byEmail = await ctx.s.all(ctx.st.ordersByEmail, { shop_id: shopId, email_lower: applied.emailLower })
    orders.push(...byEmail.filter((row) => row.customer_id === null))
  }
  for (const row of orders) {
    const order = toOrder({ ...(row as unknown as OrdersTable), email: null, email_lower: null })
    await ctx.s.all(ctx.st.eraseOrderEmail, { shop_id: shopId, order_id: order.id })
    await ctx.s.all(ctx.st.redactOrderEvents, { shop_id: shopId, order_id: order.id, body: REDACTED_BODY })
    await settleOrder(ctx, shopId, order, customerId)
  }
  if (!applied) return
  await ctx.s.all(ctx.st.redactCustomerEvents, { shop_id: shopId, customer_id: customerId, body: REDACTED_BODY })
  if (applied.emailLower !== null) await ctx.s.all(ctx.st.eraseGuestEmail, { shop_id: shopId, email_lower: applied.emailLower })
}
