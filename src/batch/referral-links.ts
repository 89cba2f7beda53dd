import type { Webhook } from '../domain/webhook.ts'
import { customerHolder, orderHolder, type Holder, type Links } from '../loyalty/referral-friend.ts'
import { normalizeEmail } from '../loyalty/referrals.ts'
import { keyOf, type BatchState, type Decision } from './state.ts'

// The links between e-mails and their holders that a batch knows (src/loyalty/referral-friend.ts):
// those stored and loaded, and those its own webhooks make. Each webhook links the e-mails it
// carries to what it names: a customer's e-mail to the customer; an order's e-mail to the order,
// and to the customer the order names; an embedded customer's e-mail to that customer. And each
// record's e-mail as it stands, which a webhook sent once (a record stored before the shop
// offered referrals left no link then). Never a link the state alone makes from two webhooks
// (an order's e-mail and a customer named by another webhook): that would depend on which came
// last. Pure: `state` is read only.

export interface BatchLinks extends Links {
  /** The links not stored yet, to write (a link stored meanwhile is written again as nothing). */
  fresh: NonNullable<Decision['heldEmails']>
}

/** The links of each shop in `shopIds`: stored, and the batch's own. */
export function batchLinks(state: BatchState, webhooks: readonly Webhook[], shopIds: ReadonlySet<number>): Map<number, BatchLinks> {
  const out = new Map<number, BatchLinks>()
  for (const shopId of shopIds) out.set(shopId, shopLinks(state, shopId))
  const hashOf = (shopId: number, email: string | null | undefined) => {
    const normalized = normalizeEmail(email)
    return normalized === null ? undefined : state.referralHashes.get(keyOf(shopId, normalized))
  }
  const link = (shopId: number, email: string | null | undefined, holder: Holder) => {
    const hash = hashOf(shopId, email)
    const links = out.get(shopId)
    if (hash !== undefined && links !== undefined) add(links, shopId, hash, holder)
  }
  for (const w of webhooks) {
    const change = w.change
    if (change === null || !shopIds.has(w.shopId)) continue
    if (change.kind === 'customer') link(w.shopId, change.customer.fields.email, customerHolder(change.customer.id))
    else {
      link(w.shopId, change.order.fields.email, orderHolder(change.order.id))
      if (change.order.customer) link(w.shopId, change.order.fields.email, customerHolder(change.order.customer.customer_id))
      if (change.customer) link(w.shopId, change.customer.fields.email, customerHolder(change.customer.id))
    }
  }
  for (const c of state.customers.values()) if (shopIds.has(c.shopId)) link(c.shopId, c.record.email, customerHolder(c.record.id))
  for (const orders of [state.orders, state.friendOrders])
    for (const o of orders.values()) if (shopIds.has(o.shopId)) link(o.shopId, o.record.email, orderHolder(o.record.id))
  return out
}

interface Maps {
  byHash: Map<string, Set<Holder>>
  byHolder: Map<Holder, Set<string>>
}

const mapsOf = new WeakMap<BatchLinks, Maps>()

function shopLinks(state: BatchState, shopId: number): BatchLinks {
  const maps: Maps = { byHash: new Map(), byHolder: new Map() }
  const links: BatchLinks = {
    fresh: [],
    holdersOf: (hash) => maps.byHash.get(hash) ?? [],
    hashesOf: (holder) => maps.byHolder.get(holder) ?? [],
  }
  mapsOf.set(links, maps)
  const prefix = `${shopId}:`
  for (const [key, holders] of state.heldEmails) {
    if (!key.startsWith(prefix)) continue
    const hash = key.slice(prefix.length)
    for (const holder of holders) put(maps, hash, holder)
  }
  return links
}

function put(maps: Maps, hash: string, holder: Holder): boolean {
  const holders = maps.byHash.get(hash) ?? new Set<Holder>()
  if (holders.has(holder)) return false
  maps.byHash.set(hash, holders.add(holder))
  maps.byHolder.set(holder, (maps.byHolder.get(holder) ?? new Set<string>()).add(hash))
  return true
}

function add(links: BatchLinks, shopId: number, emailHash: string, holder: Holder): void {
  if (put(mapsOf.get(links)!, emailHash, holder)) links.fresh.push({ shopId, emailHash, holder })
}
