import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import type { CustomerRecord, OrderRecord } from '../../domain/merge.ts'
import { fromMinor } from '../../domain/money.ts'
import { formatInstant, formatUs } from '../../domain/time.ts'
import { explainOrderPoints } from '../../write/explain.ts'
import { expiryOf, versionedRule } from '../../loyalty/rule.ts'
import { customerExpiry, DAY_US, expiringBetween } from '../../loyalty/wallet.ts'
import {
  AdminCustomer,
  AdminCustomerList,
  AdminGuest,
  ADMIN_PROBLEMS,
  CustomersQuery,
  GuestQuery,
  ShopCustomerParams,
  ShopParams,
} from '../../schemas/admin.ts'
import { customerPage, guestHeld, ledgerOf, ordersByIds, ordersOf } from '../../repos/admin-read-repo.ts'
import type { Backend } from '../../db/dialect.ts'
import { customerBalances, customerLots, customersBalances } from '../../repos/points-repo.ts'
import { readRule } from '../../repos/rule-repo.ts'
import { findStoredCustomer } from '../../repos/read-repo.ts'
import { customerView, orderView, readAnswer } from '../resources.ts'
import { readTier, readTiers } from '../../write/tier-read.ts'
import { notFound, parseId, shopByName } from '../../http/intake/index.ts'
import { ADMIN_SECURITY, decodeCursor, limitOf, listOf, TAGS, type AdminContext } from './common.ts'

// Customers as the console shows them: found by id or e-mail, deleted ones too (the tombstone and
// the ledger kept), with their points as the shop's points endpoint computes them, and their orders.

const ENTRIES = 500
const ORDERS = 100
/** As the shop's points endpoint: what expires in the next 30 days. */
const EXPIRING_DAYS = 30

const summary = (c: CustomerRecord) => ({ ...customerView(c), deleted: c.deleted })
/** A customer without ledger entries. */
const NO_BALANCE = { available: 0, pending: 0 }

type LedgerRows = Awaited<ReturnType<typeof ledgerOf>>['rows']

function entriesOf(rows: LedgerRows) {
  return rows.map((r) => ({
    order_id: r.order_id === null ? null : Number(r.order_id),
    redemption_id: r.redemption_id,
    points: Number(r.points),
    reason: r.reason,
    debt: Number(r.debt) === 1,
    basis:
      r.order_id === null
        ? null
        : {
            amount: fromMinor(Number(r.amount_minor)),
            currency: r.currency,
            rate: r.rate,
            multiplier: r.multiplier ?? '1',
            rule_version: Number(r.rule_version),
          },
    created_at: formatInstant(r.created_at),
    available_at: formatInstant(r.available_at),
    adjustment: r.adjustment_id ? { adjustment_id: r.adjustment_id, reason: r.adjustment_reason ?? '', operator: r.adjustment_operator ?? '' } : null,
    redemption: r.redemption_id ? { redemption_id: r.redemption_id, reference: r.redemption_reference ?? '' } : null,
  }))
}

/** Orders with the points each holds and why. */
async function ordersWithPoints(backend: Backend, shopId: number, orders: OrderRecord[]) {
  const out = []
  for (const o of orders) {
    const points = await explainOrderPoints(backend, shopId, o.id)
    if (points) out.push({ ...orderView(o), points })
  }
  return out
}

export async function customerRoutes(scope: FastifyInstance, ctx: AdminContext): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>()
  const { services } = ctx
  const { backend } = services
  const { db } = backend

  app.get(
    '/v3/admin/shops/:shop/customers',
    {
      onRequest: ctx.onRequest,
      schema: {
        summary: "A shop's customers, deleted ones included, by e-mail or all, each with their balance and tier now",
        operationId: 'adminListCustomers',
        tags: TAGS,
        security: ADMIN_SECURITY,
        params: ShopParams,
        querystring: CustomersQuery,
        response: { 200: readAnswer('A page of customers, newest id first', AdminCustomerList), ...ADMIN_PROBLEMS(404) },
      },
    },
    async (request) => {
      const shop = await shopByName(services, request.params.shop)
      const position = decodeCursor(request.query.cursor, ['number'])
      const page = await customerPage(db, shop.id, request.query.email ?? null, limitOf(request.query), position === null ? null : (position[0] as number))
      // The page's balances and tiers in a statement each, as the points endpoint and the card read one customer's.
      const nowUs = ctx.nowUs()
      const ids = page.rows.map((c) => c.record.id)
      const [balances, tiers] = await Promise.all([customersBalances(db, shop.id, ids, nowUs), readTiers(backend, shop.id, page.rows, nowUs)])
      return listOf(
        page,
        ({ record }) => {
          const { available, pending } = balances.get(record.id) ?? NO_BALANCE
          return { ...summary(record), tier: tiers.get(record.id)?.tier ?? null, available, pending }
        },
        (c) => [c.record.id],
      )
    },
  )

  app.get(
    '/v3/admin/shops/:shop/customers/:id',
    {
      onRequest: ctx.onRequest,
      schema: {
        summary: 'A customer, their points and their orders; a deleted one as its tombstone with the ledger kept',
        operationId: 'adminGetCustomer',
        tags: TAGS,
        security: ADMIN_SECURITY,
        params: ShopCustomerParams,
        response: { 200: readAnswer('The customer', AdminCustomer), ...ADMIN_PROBLEMS(404) },
      },
    },
    async (request) => {
      const shop = await shopByName(services, request.params.shop)
      const id = parseId(request.params.id)
      const stored = id === undefined ? undefined : await findStoredCustomer(db, shop.id, id)
      const customer = stored?.record
      if (!stored || !customer || id === undefined) throw notFound(`no customer ${request.params.id} in shop ${shop.name}`)
      const nowUs = ctx.nowUs()
      const [balances, ledger, lots, rule, orders] = await Promise.all([
        customerBalances(db, shop.id, id, nowUs),
        ledgerOf(db, shop.id, { customerId: id }, ENTRIES),
        customerLots(db, shop.id, id),
        readRule(db, shop.id),
        ordersOf(db, shop.id, { customerId: id }, ORDERS),
      ])
      const expiry = customerExpiry(expiryOf(versionedRule(rule)), stored.loyalty.importExpiry)
      // Orders the customer holds points of without being linked to them (an order matched by its
      // e-mail alone): found through the ledger, so that every credited order is listed.
      const linked = new Set(orders.map((o) => o.id))
      const creditedIds = [...new Set(ledger.rows.map((r) => (r.order_id === null ? null : Number(r.order_id))))].filter(
        (oid): oid is number => oid !== null && !linked.has(oid),
      )
      const all = [...orders, ...(await ordersByIds(db, shop.id, creditedIds))].sort((a, b) => b.id - a.id).slice(0, ORDERS)
      return {
        customer: { ...summary(customer), ...(await readTier(backend, shop.id, stored, nowUs)) },
        points: {
          ...balances,
          expiring: expiringBetween(lots, nowUs, nowUs + EXPIRING_DAYS * DAY_US, expiry).map((e) => ({ points: e.points, at: formatUs(e.at_us) })),
          entries: entriesOf(ledger.rows),
          more_entries: ledger.more,
        },
        orders: await ordersWithPoints(backend, shop.id, all),
      }
    },
  )

  app.get(
    '/v3/admin/shops/:shop/guests',
    {
      onRequest: ctx.onRequest,
      schema: {
        summary: 'The points held for a guest e-mail, and its orders (those of no customer)',
        operationId: 'adminGetGuest',
        tags: TAGS,
        security: ADMIN_SECURITY,
        params: ShopParams,
        querystring: GuestQuery,
        response: { 200: readAnswer('The guest', AdminGuest), ...ADMIN_PROBLEMS(404) },
      },
    },
    async (request) => {
      const shop = await shopByName(services, request.params.shop)
      const email = request.query.email.toLowerCase()
      const [held, ledger, orders] = await Promise.all([
        guestHeld(db, shop.id, email),
        ledgerOf(db, shop.id, { guestEmail: email }, ENTRIES),
        ordersOf(db, shop.id, { guestEmail: email }, ORDERS),
      ])
      // An order sent with the e-mail whose points a customer holds (matched by the e-mail) is that
      // customer's, not the guest's: listed apart, naming the customer, so that the e-mail leads to it.
      const withPoints = await ordersWithPoints(backend, shop.id, orders)
      return {
        email,
        points: { held, entries: entriesOf(ledger.rows) },
        orders: withPoints.filter((o) => o.points.customer_id === null),
        credited_orders: withPoints.filter((o) => o.points.customer_id !== null),
      }
    },
  )
}
