import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { runs } from '../../test/support/seed.ts'
import { decide, webhook as hook } from '../../test/support/decider.ts'
import type { Topic, Webhook } from '../domain/webhook.ts'
import type { CustomerBody, OrderBody } from '../schemas/webhooks.ts'
import { emptyState } from './state.ts'

// Whatever the webhooks and however they are split into batches: every customer row, order row
// and ledger entry a decision writes has exactly one feed entry, in the shop of the row, and no
// entry carries a name, an e-mail or a tag; per resource, revisions follow each other.

const NAMES = ['Zelda', 'Quentin', 'Marguerite']
const EMAILS = ['zelda@example.org', 'quentin@example.org', 'marguerite@example.org']
const TAGS = ['gold-tier', 'returning-buyer']

const webhook = (topic: Topic, body: Record<string, unknown>, receivedUs: number) => hook(topic, body as unknown as CustomerBody | OrderBody, { receivedUs })

const at = (minute: number) => new Date(Date.UTC(2024, 4, 1, 10) + minute * 60_000).toISOString()
const customerArb = fc.record({
  id: fc.integer({ min: 1, max: 3 }),
  name: fc.integer({ min: 0, max: 2 }),
  minute: fc.integer({ min: 0, max: 500 }),
  newsletter: fc.boolean(),
  del: fc.boolean(),
})
const orderArb = fc.record({
  id: fc.integer({ min: 10, max: 13 }),
  customer: fc.option(fc.integer({ min: 1, max: 3 })),
  email: fc.integer({ min: 0, max: 2 }),
  minute: fc.integer({ min: 0, max: 500 }),
  paid: fc.boolean(),
  refunded: fc.boolean(),
  cents: fc.integer({ min: 0, max: 20_000 }),
})
const itemArb = fc.oneof(
  customerArb.map((c) => ({ kind: 'customer' as const, ...c })),
  orderArb.map((o) => ({ kind: 'order' as const, ...o })),
)

type Item = typeof itemArb extends fc.Arbitrary<infer T> ? T : never

function toWebhook(item: Item, i: number): Webhook {
  if (item.kind === 'customer') {
    const body = {
      id: item.id,
      first_name: NAMES[item.name],
      email: EMAILS[item.name],
      tags: TAGS,
      is_newsletter: item.newsletter,
      updated_at: at(item.minute),
    }
    return webhook(item.del ? 'customer/hook_deleted' : 'customer/hook_created', body, 1_000_000 + i)
  }
  const body = {
    id: item.id,
    currency: 'EUR',
    subtotal: `${Math.floor(item.cents / 100)}.${String(item.cents % 100).padStart(2, '0')}`,
    is_paid: item.paid,
    is_refunded: item.refunded,
    processed_at: '2024-03-01T09:00:00Z',
    updated_at: at(item.minute),
    email: EMAILS[item.email],
    ...(item.customer === null
      ? {}
      : { customer: { id: item.customer, first_name: NAMES[item.email], email: EMAILS[item.email], tags: TAGS, updated_at: at(item.minute) } }),
  }
  return webhook('order/hook_created', body, 1_000_000 + i)
}

test("every row a decision writes has one entry; none carries personal data; each resource's revisions follow each other", () => {
  fc.assert(
    fc.property(
      fc.array(itemArb, { minLength: 1, maxLength: 30 }),
      fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 1, maxLength: 10 }),
      (items, cuts) => {
        const hooks = items.map(toWebhook)
        let state = emptyState()
        const revs = new Map<string, number>()
        let i = 0
        for (let b = 0; i < hooks.length; b++) {
          const batch = hooks.slice(i, i + cuts[b % cuts.length]!)
          i += batch.length
          const { decision: d, state: next } = decide(state, batch)
          const byType = (t: string) => d.feed.filter((f) => f.type === t)
          assert.equal(byType('customer.updated').length + byType('customer.deleted').length, d.customers.length)
          assert.equal(byType('order.updated').length, d.orders.length)
          assert.equal(byType('points.changed').length, d.ledger.length)
          const text = JSON.stringify(d.feed)
          for (const word of [...NAMES, ...EMAILS, ...TAGS]) assert.ok(!text.includes(word), `no "${word}" in the feed`)
          for (const f of d.feed) {
            if (f.type !== 'customer.updated' && f.type !== 'customer.deleted' && f.type !== 'order.updated') continue
            const key = f.type === 'order.updated' ? `o${f.data.order_id}` : `c${f.data.customer_id}`
            assert.equal(f.data.rev, (revs.get(key) ?? 0) + 1, `${key}: the next revision`)
            revs.set(key, f.data.rev)
          }
          state = next
        }
      },
    ),
    { numRuns: runs(300) },
  )
})
