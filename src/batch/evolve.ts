import { addToLots, type Lot, type LotEntry } from '../loyalty/wallet.ts'
import { keyOf, referralKeyOf, type BatchState, type Decision, type LedgerLine, type LedgerRow } from './state.ts'
import { noticeKey } from './decide-notices.ts'

// The other half of the decider: a decision applied to a state, in memory, as the store's write
// of it (src/write/save.ts) and a later load (src/write/load.ts) would leave it. A
// batch is a fold of decideBatch and evolve; the property tests' reference and every decider
// test apply decisions with it, so none keeps its own copy of what a write does.

/**
 * The state after `decision` is written: its customers and orders at their next revision, its
 * order entries appended to their orders' ledgers (guest e-mails erased where it redacts an
 * order), the idempotency keys it claims, its redemptions and adjustments, the guest holdings
 * a load would find, its earnings, its expiry warnings, its reward notices, and the entries of
 * customers in the lots and imports held. Pure: neither `state` nor `decision` is changed.
 */
export function evolve(state: BatchState, decision: Decision): BatchState {
  const customers = new Map(state.customers)
  for (const c of decision.customers) customers.set(keyOf(c.shopId, c.record.id), { ...c, rev: c.rev + 1 })
  const orders = new Map(state.orders)
  for (const o of decision.orders) orders.set(keyOf(o.shopId, o.record.id), { ...o, rev: o.rev + 1 })

  const ledger = new Map(state.ledger)
  // A written order's ledger is loaded with it, empty while it holds nothing.
  for (const o of decision.orders) if (!ledger.has(keyOf(o.shopId, o.record.id))) ledger.set(keyOf(o.shopId, o.record.id), [])
  for (const row of decision.ledger) {
    if (row.orderId === null) continue
    const key = keyOf(row.shopId, row.orderId)
    const line: LedgerLine = { customerId: row.customerId, guestEmail: row.guestEmail, points: row.points, basis: row.basis }
    ledger.set(key, [...(ledger.get(key) ?? []), line])
  }
  // Erasure nulls the guest e-mail on the erased orders' entries.
  for (const r of decision.redactions) {
    for (const id of r.orderIds) {
      const key = keyOf(r.shopId, id)
      const lines = ledger.get(key)
      if (lines)
        ledger.set(
          key,
          lines.map((l) => ({ ...l, guestEmail: null })),
        )
    }
  }

  const idem = new Map(state.idem)
  for (const e of decision.events) if (e.idemKey !== null) idem.set(keyOf(e.shopId, e.idemKey), e.id)
  const redemptions = new Map(state.redemptions)
  const redemptionIdem = new Map(state.redemptionIdem)
  for (const r of [...decision.redemptions, ...decision.cancels]) {
    redemptions.set(keyOf(r.shopId, r.id), r)
    if (r.idemKey !== null) redemptionIdem.set(keyOf(r.shopId, r.idemKey), r.id)
  }
  const adjustmentIdem = new Map(state.adjustmentIdem)
  for (const a of decision.adjustments ?? []) if (a.idemKey !== null) adjustmentIdem.set(keyOf(a.shopId, a.idemKey), a)
  const earnings = new Map(state.earnings)
  for (const e of decision.earnings ?? []) {
    if (e.row) earnings.set(keyOf(e.shopId, e.orderId), e.row)
    else earnings.delete(keyOf(e.shopId, e.orderId))
  }
  const warned = new Map(state.warned)
  for (const w of decision.warnings ?? []) warned.set(`${w.shopId}:${w.customerId}:${w.expiresUs}`, w.daysBefore)

  const claims = new Map(state.claims)
  const claimIdem = new Map(state.claimIdem)
  for (const c of [...(decision.claims ?? []), ...(decision.claimCancels ?? [])]) {
    claims.set(keyOf(c.shopId, c.id), c)
    if (c.idemKey !== null) claimIdem.set(keyOf(c.shopId, c.idemKey), c.id)
  }
  const rewards = new Map(state.rewards)
  for (const r of decision.pools ?? []) rewards.set(keyOf(r.shopId, r.id), { ...r, loadedCursor: r.codeCursor, codesPassed: 0 })
  // A code the decision handed out (a generated one may equal a code of a pool) is held from then on.
  const handedOut = new Set((decision.claims ?? []).map((c) => keyOf(c.shopId, c.code)))
  const poolCodes = new Map(
    [...state.poolCodes].map(([key, codes]) => {
      const shopId = rewards.get(key)?.shopId
      return [key, codes.map((c) => (!c.held && shopId !== undefined && handedOut.has(keyOf(shopId, c.code)) ? { ...c, held: true } : c))]
    }),
  )
  const { wallets, imported } = holdingsAfter(state, decision.ledger)
  const referrals = new Map(state.referrals)
  for (const { referral } of decision.referrals ?? []) {
    referrals.set(referralKeyOf(referral.shopId, referral.emailHash, referral.referrerId), { ...referral, rev: referral.rev + 1 })
  }
  const heldEmails = new Map([...state.heldEmails].map(([key, holders]) => [key, new Set(holders)]))
  for (const l of decision.heldEmails ?? [])
    heldEmails.set(keyOf(l.shopId, l.emailHash), (heldEmails.get(keyOf(l.shopId, l.emailHash)) ?? new Set()).add(l.holder))
  const friendMembers = new Map([...state.friendMembers].map(([key, members]) => [key, new Set(members)]))
  for (const m of decision.friendMembers ?? []) {
    friendMembers.set(keyOf(m.shopId, m.emailHash), (friendMembers.get(keyOf(m.shopId, m.emailHash)) ?? new Set()).add(m.member))
  }

  return {
    customers,
    orders,
    ledger,
    rules: new Map(state.rules),
    programs: new Map(state.programs),
    timeZones: new Map(state.timeZones),
    earnings,
    earningsRanges: state.earningsRanges && new Map(state.earningsRanges),
    erasedEmailsKnown: state.erasedEmailsKnown && new Set(state.erasedEmailsKnown),
    warned,
    idem,
    guestOrders: guestOrdersOf(ledger),
    wallets,
    redemptions,
    redemptionIdem,
    adjustmentIdem,
    rewards,
    poolCodes,
    poolsLoadedToEnd: state.poolsLoadedToEnd && new Set(state.poolsLoadedToEnd),
    claims,
    claimIdem,
    imported,
    referrals,
    referralHashes: new Map(state.referralHashes),
    referrersLoaded: state.referrersLoaded && new Set(state.referrersLoaded),
    heldEmails,
    friendMembers,
    friendOrders: new Map(state.friendOrders),
    friendsLoaded: state.friendsLoaded && new Set(state.friendsLoaded),
    ...noticesAfter(state, decision),
    ...birthdaysAfter(state, decision),
    activities: activitiesAfter(state, decision),
  }
}

/** The birthdays the decision set and the years it paid; a deleted customer's birthday is erased with them. */
function birthdaysAfter(state: BatchState, decision: Decision): Pick<BatchState, 'birthdays' | 'birthdayYears'> {
  // A state that never held birthdays, and a decision that sets none, hold none after it.
  if (!state.birthdays && !state.birthdayYears && !decision.birthdays && !decision.birthdayRewards) return {}
  const birthdays = new Map(state.birthdays)
  for (const b of decision.birthdays ?? []) birthdays.set(keyOf(b.shopId, b.customerId), b.birthday)
  for (const r of decision.redactions ?? []) for (const id of r.customerIds) birthdays.delete(keyOf(r.shopId, id))
  const birthdayYears = new Map(state.birthdayYears)
  for (const b of decision.birthdayRewards ?? []) {
    const key = keyOf(b.shopId, b.customerId)
    birthdayYears.set(key, [...(birthdayYears.get(key) ?? []), b.year])
  }
  return { birthdays, birthdayYears }
}

/** The notices the decision wrote, and the catalogue's pools as its claims leave them. */
function noticesAfter(state: BatchState, decision: Decision): Pick<BatchState, 'noticeRewards' | 'rewardNotices'> {
  const rewardNotices = new Map(state.rewardNotices)
  for (const { shopId, customerId, rewardId, reached, sentUs } of decision.noticeRows ?? [])
    rewardNotices.set(noticeKey(shopId, customerId, rewardId), { reached, sentUs })
  const noticeRewards = new Map(state.noticeRewards)
  for (const pool of decision.pools ?? []) {
    const catalogue = noticeRewards.get(pool.shopId)
    if (!catalogue) continue
    noticeRewards.set(
      pool.shopId,
      catalogue.map((r) =>
        r.id === pool.id && r.codesLeft !== null
          ? { ...r, codesLeft: r.codesLeft - (pool.codesIssued - r.codesIssued) - pool.codesPassed, codesIssued: pool.codesIssued }
          : r,
      ),
    )
  }
  return { noticeRewards, rewardNotices }
}

/**
 * The entries that open a customer's lots when none are loaded: only a command's (the decider
 * opens the lots of the customer a command names; an expiry is due only on lots a command
 * opened or that were loaded). A bonus's or an order's entry reaches loaded lots only.
 */
const COMMAND_REASONS: ReadonlySet<string> = new Set(['expired', 'redeemed', 'redemption_cancelled', 'adjusted_manually', 'import', 'birthday', 'activity'])

/**
 * The lots and imports after the decision's entries, copied only for the customers they reach:
 * an entry goes into its customer's lots when those are loaded (or a command's entry opens
 * them, as the decider does), an expiry into the lot's expired too; an import's also into what
 * the customer holds of imports.
 */
function holdingsAfter(state: BatchState, rows: readonly LedgerRow[]): Pick<BatchState, 'wallets' | 'imported'> {
  const wallets = new Map(state.wallets)
  const imported = new Map(state.imported)
  const copied = new Set<string>()
  for (const row of rows) {
    if (row.customerId === null) continue
    const key = keyOf(row.shopId, row.customerId)
    const entry: LotEntry = { available_us: row.basis.available_us, points: row.points }
    if (row.reason === 'import') imported.set(key, [...(imported.get(key) ?? []), entry])
    let lots: Lot[] | undefined = wallets.get(key)
    if (lots === undefined && !(row.orderId === null && COMMAND_REASONS.has(row.reason))) continue
    if (!copied.has(key)) {
      lots = (lots ?? []).map((l) => ({ ...l }))
      wallets.set(key, lots)
      copied.add(key)
    }
    addToLots(lots!, entry, row.reason === 'expired')
  }
  return { wallets, imported }
}

/** The orders holding points under a guest e-mail, by `${shopId}:${email}`, as a load finds them. */
export function guestOrdersOf(ledger: BatchState['ledger']): BatchState['guestOrders'] {
  const guestOrders = new Map<string, number[]>()
  for (const [key, lines] of ledger) {
    const held = new Map<string, number>()
    for (const l of lines) if (l.customerId === null && l.guestEmail !== null) held.set(l.guestEmail, (held.get(l.guestEmail) ?? 0) + l.points)
    const [shopId, orderId] = key.split(':').map(Number) as [number, number]
    for (const [email, points] of held) {
      if (points === 0) continue
      const k = keyOf(shopId, email)
      guestOrders.set(k, [...(guestOrders.get(k) ?? []), orderId])
    }
  }
  return guestOrders
}

/** Each customer's reports as the decision leaves them (src/batch/decide-activities.ts), their revisions moved on. */
function activitiesAfter(state: BatchState, decision: Decision): BatchState['activities'] {
  const activities = new Map(state.activities)
  for (const { activity } of decision.activities ?? []) {
    const key = keyOf(activity.shopId, activity.customerId)
    const list = (activities.get(key) ?? []).filter((a) => !(a.action === activity.action && a.reference === activity.reference))
    activities.set(key, [...list, { ...activity, rev: activity.rev + 1 }])
  }
  return activities
}
