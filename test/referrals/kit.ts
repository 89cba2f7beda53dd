import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'
import { adminClient, newOperator, type AdminClient } from '../support/admin.ts'
import { CUSTOMER_CREATED, CUSTOMER_DELETED, ORDER_CREATED, type TestApp } from '../support/harness.ts'
import { ORIGIN, storefrontShop, type StorefrontShop } from '../storefront/kit.ts'
import { DEFAULT_RULE, type Rule } from '../../src/loyalty/rule.ts'

// What the referral suites share: a shop of its own with a referral program, its customers' codes,
// a friend's claim as the shop's page makes it (each from its own address, so that the per-address
// limit never bites), the webhooks, and what the shop API, the console and the feed then show.

export const SECRETS_KEY = Buffer.alloc(32, 9).toString('base64')

/** A referral as the console lists it. */
export interface ListedReferral {
  referral_id: string
  referrer_id: number
  status: string
  reason: string
  order_id: number | null
  referrer_points: number
  friend_customer_id: number | null
  friend_points: number
  reward_code: string | null
  reward_code_void: boolean
}

/** A feed entry. */
export interface Change {
  type: string
  data: Record<string, unknown>
}

export interface ReferralShop {
  s: StorefrontShop
  admin: AdminClient
  /** The referral code of a customer (registered first, with `email`, when given). */
  codeOf(customer: number, email?: string): Promise<string>
  claim(email: string, code: string): Promise<LightMyRequestResponse>
  /** A webhook of the shop, which must be answered 200. */
  hook(path: string, body: object): Promise<void>
  customer(body: object): Promise<void>
  order(body: object): Promise<void>
  deleted(body: object): Promise<void>
  /** A customer's points, available and pending together (the shop API's answer). */
  held(customer: number): Promise<number>
  /** The reasons and points of a customer's ledger entries, newest first. */
  entries(customer: number): Promise<[string, number][]>
  referrals(query?: string): Promise<ListedReferral[]>
  /** The shop's feed entries of these types' prefix (`referral.` by default). */
  feed(prefix?: string): Promise<Change[]>
}

let address = 0

/** A shop named `name` on `t`, its rule `rule` over the defaults (no pending days). */
export async function referralShop(t: TestApp, name: string, rule: Partial<Rule>): Promise<ReferralShop> {
  const admin = adminClient(t, (await newOperator(t, `Ops ${name}`)).key)
  const s = await storefrontShop(t, name)
  const put = await admin.put(`/v3/admin/shops/${name}/rule`, { ...DEFAULT_RULE, pending_days: 0, ...rule })
  assert.equal(put.statusCode, 200, put.body)
  const hook = async (path: string, body: object) => {
    const res = await t.post(path, body, { key: s.key })
    assert.equal(res.statusCode, 200, `${path} ${JSON.stringify(body)}: ${res.body}`)
  }
  const shop: ReferralShop = {
    s,
    admin,
    async codeOf(customer, email) {
      if (email !== undefined) await hook(CUSTOMER_CREATED, { id: customer, email })
      const res = await s.call('GET', '/me/referral', await s.token(customer))
      assert.equal(res.statusCode, 200, res.body)
      return res.json().code
    },
    claim: (email, code) =>
      t.app.inject({
        method: 'POST',
        url: `/v3/storefront/referrals/${code}/claim`,
        headers: { 'shop-key': s.pk, origin: ORIGIN, 'content-type': 'application/json' },
        payload: JSON.stringify({ email }),
        remoteAddress: `10.${(++address >> 16) & 255}.${(address >> 8) & 255}.${address & 255}`,
      }),
    hook,
    customer: (body) => hook(CUSTOMER_CREATED, body),
    order: (body) => hook(ORDER_CREATED, { currency: 'EUR', ...body }),
    deleted: (body) => hook(CUSTOMER_DELETED, body),
    async held(customer) {
      const res = await t.get(`/v3/customers/${customer}/points`, s.key)
      if (res.statusCode === 404) return 0
      assert.equal(res.statusCode, 200, res.body)
      return res.json().available + res.json().pending
    },
    async entries(customer) {
      const res = await t.get(`/v3/customers/${customer}/points`, s.key)
      assert.equal(res.statusCode, 200, res.body)
      return res.json().entries.map((e: { reason: string; points: number }) => [e.reason, e.points])
    },
    async referrals(query = '') {
      const res = await admin.get(`/v3/admin/shops/${name}/referrals${query}`)
      assert.equal(res.statusCode, 200, res.body)
      return res.json().items
    },
    async feed(prefix = 'referral.') {
      const res = await t.get('/v3/changes?limit=500', s.key)
      assert.equal(res.statusCode, 200, res.body)
      return res.json().changes.filter((e: Change) => e.type.startsWith(prefix))
    },
  }
  return shop
}

/** Seconds from now, as an instant of a webhook (a friend's order just after the claim). */
export const soon = (seconds: number) => new Date(Date.now() + seconds * 1000).toISOString()
/** Days ago, as an instant. */
export const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString()

/** The status and reason of each of the console's referrals, oldest claim first. */
export const states = (list: readonly ListedReferral[]) => [...list].reverse().map((r) => [r.referrer_id, r.status, r.reason])
