import type { Selectable } from 'kysely'
import type { Webhook } from '../domain/webhook.ts'
import { batchLinks } from '../batch/referral-links.ts'
import { keyOf, type BatchState } from '../batch/state.ts'
import { storedReferral } from '../db/referral-rows.ts'
import { storedCustomer, storedOrder } from '../db/rows.ts'
import type { Backend, Session } from '../db/dialect.ts'
import type { CustomersTable, OrdersTable } from '../db/tables.ts'
import { customerHolder, friendOf, orderHolder } from '../loyalty/referral-friend.ts'
import { normalizeEmail } from '../loyalty/referrals.ts'
import { LocksBusy } from './locks-busy.ts'
import { statementsOf } from './statements-of.ts'

// The referrals a batch may change (src/batch/decide-referrals.ts), in a shop that offers them,
// on the write path (src/write/load.ts calls it last but the points): the friends its records
// reach, found by their members (`e:HASH`, `c:ID`, `o:ID`: referral_members), and of each
// friend everything its referrals are decided from, read under the locks of what they depend on.
// A batch that links an e-mail holds the lock of its hash (`h:HASH`), one that changes a customer
// or an order holds theirs: so a friend is read whole, or the batch runs again with what another
// one held locked first (LocksBusy), and a batch that joins something to a friend finds the
// friend, or waits for the one deciding it.

/** The keyed hash of a normalised e-mail in a shop (src/keys/referral-keys.ts). */
export type EmailHasher = (shopId: number, normalizedEmail: string) => string

export interface ReferralNeeds {
  /** E-mails the batch names (lower case): orders', customers', claims'. */
  emails: readonly string[]
  /** The batch's referral claims: their e-mail's hash and their referrer. */
  claims: readonly { emailHash: string; customerId: number }[]
  webhooks: readonly Webhook[]
}

/**
 * Loads the friends the shop's records in `state` and the batch (`needs`) reach, with their
 * links, members, orders, customers and referrals, and every referral of their referrers (the
 * monthly cap decides them together); try-locks what they depend on.
 */
export async function loadReferrals(
  backend: Backend,
  s: Session,
  state: BatchState,
  shopId: number,
  needs: ReferralNeeds,
  locked: ReadonlySet<string>,
  hashEmail: EmailHasher,
): Promise<void> {
  const q = statementsOf(backend)
  const held = new Set(locked)
  const lock = async (keys: Iterable<string>) => {
    const fresh = [...new Set(keys)].filter((key) => !held.has(key))
    if (fresh.length === 0) return
    if (!(await backend.tryLockKeys(s, fresh))) throw new LocksBusy(fresh)
    fresh.forEach((key) => held.add(key))
  }
  const hashOf = (email: string | null | undefined) => {
    const normalized = normalizeEmail(email)
    if (normalized === null) return undefined
    const key = keyOf(shopId, normalized)
    const known = state.referralHashes.get(key)
    if (known !== undefined) return known
    const hash = hashEmail(shopId, normalized)
    state.referralHashes.set(key, hash)
    return hash
  }
  const hashLock = (hash: string) => `${shopId}:h:${hash}`
  const addCustomers = (rows: readonly Selectable<CustomersTable>[]) => {
    for (const row of rows) {
      const key = keyOf(shopId, Number(row.id))
      if (!state.customers.has(key)) state.customers.set(key, storedCustomer(shopId, row))
      hashOf(row.email)
    }
  }
  const addOrders = (rows: readonly Selectable<OrdersTable>[]) => {
    for (const row of rows) {
      const key = keyOf(shopId, Number(row.id))
      if (!state.orders.has(key)) state.friendOrders.set(key, storedOrder(shopId, row))
      hashOf(row.email)
    }
  }
  const addHolders = (rows: readonly { email_hash: string; holder: string }[]) => {
    for (const row of rows) {
      const key = keyOf(shopId, row.email_hash)
      state.heldEmails.set(key, (state.heldEmails.get(key) ?? new Set()).add(row.holder))
    }
  }

  // What the batch names and holds, as members: its e-mails' hashes (each locked: a friend is read
  // by one batch at a time), its customers and its orders.
  const hashes = new Set(needs.claims.map((c) => c.emailHash))
  const note = (email: string | null | undefined) => {
    const hash = hashOf(email)
    if (hash !== undefined) hashes.add(hash)
  }
  needs.emails.forEach(note)
  for (const c of state.customers.values()) if (c.shopId === shopId) note(c.record.email)
  const members = new Set<string>()
  for (const o of [...state.orders.values(), ...state.friendOrders.values()]) {
    if (o.shopId !== shopId) continue
    note(o.record.email)
    members.add(orderHolder(o.record.id))
    if (o.record.customer_id !== null) members.add(customerHolder(o.record.customer_id))
  }
  for (const c of state.customers.values()) if (c.shopId === shopId) members.add(customerHolder(c.record.id))
  for (const w of needs.webhooks) {
    if (w.change?.kind === 'customer') members.add(customerHolder(w.change.customer.id))
    if (w.change?.kind === 'order') members.add(orderHolder(w.change.order.id))
    if (w.change?.kind === 'order' && w.change.customer) members.add(customerHolder(w.change.customer.id))
  }
  await lock([...hashes].map(hashLock))
  const found = await s.run(q.membersByMember(shopId, [...members, ...[...hashes].map((h) => `e:${h}`)]))
  const friends = new Set([...found.map((m) => m.email_hash), ...needs.claims.map((c) => c.emailHash)])
  if (friends.size === 0) return

  // Each friend, under its e-mail's lock: its referrals, links and members, then its customers'
  // links (their other e-mails), then those e-mails' links (their orders), each step locked first.
  await lock([...friends].map(hashLock))
  const [referrals, links, stored] = await s.runMany([
    q.referralsByHash(shopId, [...friends]),
    q.holdersByHash(shopId, [...friends]),
    q.membersByFriend(shopId, [...friends]),
  ] as const)
  addHolders(links)
  for (const m of stored) {
    const key = keyOf(shopId, m.email_hash)
    state.friendMembers.set(key, (state.friendMembers.get(key) ?? new Set()).add(m.member))
  }
  const graph = () => {
    const all = batchLinks(state, needs.webhooks, new Set([shopId])).get(shopId)!
    const customers = new Set<number>()
    const emails = new Set<string>()
    const orders = new Set<number>()
    for (const hash of friends) {
      const friend = friendOf(hash, all, () => [])
      friend.customers.forEach((id) => customers.add(id))
      friend.emails.forEach((h) => emails.add(h))
      friend.orders.forEach((id) => orders.add(id))
    }
    return { customers: [...customers], emails: [...emails], orders: [...orders] }
  }
  const referrers = new Set([...referrals.map((r) => Number(r.referrer_id)), ...needs.claims.map((c) => c.customerId)])
  const customers = graph().customers
  await lock([...referrers, ...customers].map((id) => `${shopId}:c:${id}`))
  if (customers.length > 0) addHolders(await s.run(q.holdersByHolder(shopId, customers.map(customerHolder))))
  const emails = graph().emails.filter((h) => !friends.has(h))
  await lock(emails.map(hashLock))
  if (emails.length > 0) addHolders(await s.run(q.holdersByHash(shopId, emails)))
  const orderIds = graph().orders
  await lock(orderIds.map((id) => `${shopId}:o:${id}`))
  const loaded = (id: number) => state.orders.has(keyOf(shopId, id)) || state.friendOrders.has(keyOf(shopId, id))
  const [byId, byCustomer, all, people] = await s.runMany([
    q.ordersById(
      shopId,
      orderIds.filter((id) => !loaded(id)),
    ),
    q.ordersByCustomer(shopId, customers),
    q.referralsByReferrer(shopId, [...referrers]),
    q.customersById(
      shopId,
      [...referrers, ...customers].filter((id) => !state.customers.has(keyOf(shopId, id))),
    ),
  ] as const)
  addCustomers(people)
  // A customer's orders are written under its lock, held; but a refund or a cancel names only the
  // order: each order found so is locked too, and read again under its lock.
  const unheld = byCustomer.filter((row) => !held.has(`${shopId}:o:${row.id}`)).map((row) => Number(row.id))
  await lock(unheld.map((id) => `${shopId}:o:${id}`))
  addOrders(byId)
  addOrders(byCustomer.filter((row) => !unheld.includes(Number(row.id))))
  // Who each order found is credited to (its customer, or a live customer of its e-mail), as settlement finds it.
  const friendOrders = [...state.friendOrders.values()].filter((o) => o.shopId === shopId)
  const owners = [...new Set(friendOrders.map((o) => o.record.customer_id).filter((id): id is number => id !== null))].filter(
    (id) => !state.customers.has(keyOf(shopId, id)),
  )
  const guestEmails = [
    ...new Set(friendOrders.filter((o) => o.record.customer_id === null && o.record.email !== null).map((o) => o.record.email!.toLowerCase())),
  ]
  if (unheld.length + owners.length + guestEmails.length > 0) {
    const [again, linked, byEmail] = await s.runMany([
      q.ordersById(shopId, unheld),
      q.customersById(shopId, owners),
      q.customersByEmail(shopId, guestEmails),
    ] as const)
    addOrders(again)
    addCustomers(linked)
    addCustomers(byEmail)
  }
  for (const row of all) state.referrals.set(`${shopId}:${row.email_hash}:${Number(row.referrer_id)}`, storedReferral(shopId, row))
  for (const id of referrers) state.referrersLoaded?.add(keyOf(shopId, id))
  // The friends' referrals by every referrer are among those of their referrers, read again under their locks.
  for (const hash of friends) state.friendsLoaded?.add(keyOf(shopId, hash))
}
