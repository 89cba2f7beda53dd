// Who a friend is (docs/program/referrals.md, "The friend"): not one e-mail, but the customers and
// orders the webhooks tied to it. Every webhook of a shop that offers referrals leaves links: an
// e-mail (as the keyed hash of its normal form) with the customer it was given to, and with the
// order it was sent with (and an order's own e-mail with the customer it names). Links are only
// ever added, whatever order the webhooks come in, so the friend they make is the same in any
// order of arrival. Pure: the links and the orders of a customer are given.

/** A customer (`c:ID`) or an order (`o:ID`) an e-mail was given to. */
export type Holder = string

export const customerHolder = (id: number): Holder => `c:${id}`
export const orderHolder = (id: number): Holder => `o:${id}`

/** The links known: each e-mail hash's holders, and each holder's e-mail hashes. */
export interface Links {
  holdersOf(hash: string): Iterable<Holder>
  hashesOf(holder: Holder): Iterable<string>
}

/** What a member of a friend's identity is kept as, to find the friend again from it: `e:HASH`, `c:ID`, `o:ID`. */
export type Member = string

export interface Friend {
  /** Every customer that was given the friend's e-mail, in any spelling of it. */
  customers: number[]
  /** The friend's e-mail and every other e-mail those customers were given (hashes). */
  emails: string[]
  /** Every order sent with one of those e-mails, and every order credited to one of those customers. */
  orders: number[]
}

const idsOf = (holders: Iterable<Holder>, kind: 'c' | 'o') => [...holders].filter((h) => h.startsWith(`${kind}:`)).map((h) => Number(h.slice(2)))

/**
 * The friend of the e-mail `hash`: its customers (those given it), their e-mails, and the orders
 * of either. `ordersOf` gives the orders credited to a customer. One step out from the e-mail and
 * no further: a customer who shares another e-mail with one of them is not the friend.
 */
export function friendOf(hash: string, links: Links, ordersOf: (customerId: number) => Iterable<number>): Friend {
  const customers = new Set(idsOf(links.holdersOf(hash), 'c'))
  const emails = new Set([hash])
  for (const id of customers) for (const h of links.hashesOf(customerHolder(id))) emails.add(h)
  const orders = new Set<number>()
  for (const h of emails) for (const id of idsOf(links.holdersOf(h), 'o')) orders.add(id)
  for (const id of customers) for (const o of ordersOf(id)) orders.add(o)
  const sorted = (ids: Iterable<number>) => [...ids].sort((a, b) => a - b)
  return { customers: sorted(customers), emails: [...emails].sort(), orders: sorted(orders) }
}

/** The members a friend is found again by: its e-mails, customers and orders. */
export function membersOf(friend: Friend): Member[] {
  return [...friend.emails.map((h) => `e:${h}`), ...friend.customers.map(customerHolder), ...friend.orders.map(orderHolder)]
}
