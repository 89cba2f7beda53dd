import { excludedSet, type StatementFactory } from './statement-factory.ts'
import {
  CUSTOMER_COLUMNS,
  CUSTOMER_INDEXED,
  EVENT_COLUMNS,
  LEDGER_COLUMNS,
  ORDER_COLUMNS,
  ORDER_INDEXED,
  REDEMPTION_COLUMNS,
  ADJUSTMENT_COLUMNS,
  CLAIM_COLUMNS,
  type LedgerRow,
} from '../db/rows.ts'
import type {
  CustomersTable,
  OrdersTable,
  RedemptionsTable,
  AdjustmentsTable,
  ClaimsTable,
  RewardsTable,
  ReferralsTable,
  EmailHoldersTable,
  ReferralMembersTable,
} from '../db/tables.ts'
import { REFERRAL_COLUMNS } from '../db/referral-rows.ts'
import { ACTIVITY_COLUMNS } from '../db/activity-rows.ts'
import type { ActivitiesTable } from '../db/tables.ts'
import type { Selectable } from 'kysely'

// Every statement of the write path, built once per backend from its dialect's factory. The
// load rounds (src/write/load.ts) and the write (src/write/save.ts) use these and
// nothing else, so that no batch compiles SQL.

/** A ledger entry as the load reads it. */
export interface LedgerRead extends LedgerRow {
  id: number
  order_id: number | null
  multiplier: string | null
}

/** An earning as the load reads it (order_earnings). */
export interface EarningRead {
  order_id: number
  customer_id: number
  processed_us: number
  base: number
}

export type BatchStatements = ReturnType<typeof batchStatements>

export function batchStatements(f: StatementFactory) {
  const customersBy = (column: 'id' | 'email_lower' | 'erased_email_sha') =>
    f.lookup<Selectable<CustomersTable>>({ table: 'customers', columns: '*', column, keyType: column === 'id' ? 'bigint' : 'text' })
  const ordersBy = (column: 'id' | 'customer_id' | 'email_lower') =>
    f.lookup<Selectable<OrdersTable>>({ table: 'orders', columns: '*', column, keyType: column === 'email_lower' ? 'text' : 'bigint' })
  /** `keeping`: columns an update leaves as they are (their values are unchanged), so that their indexes are not written. */
  const upsert = (table: 'customers' | 'orders', columns: readonly string[], types: readonly string[], keeping: readonly string[] = []) =>
    f.insert({
      table,
      columns,
      types,
      // Only a row still at the revision the batch loaded is written (`rev` is the loaded one plus 1).
      conflict: `ON CONFLICT (shop_id, id) DO UPDATE SET ${excludedSet(columns, ['shop_id', 'id', ...keeping])} WHERE ${table}.rev = excluded.rev - 1 RETURNING 1`,
    })
  const claimOnce = (table: string, columns: readonly string[], types: readonly string[]) =>
    f.insert({ table, columns, types, conflict: 'ON CONFLICT (shop_id, idem_key) WHERE idem_key IS NOT NULL DO NOTHING RETURNING 1' })

  return {
    /** The shop's rule and time zone, and whether it has rewards (rewards_shop): only then are reward.available decided (src/batch/decide-notices.ts). */
    rule: f.text<{
      rule: string | null
      rule_version: number
      expiry_schedule: string | null
      program_schedule: string | null
      time_zone: string
      has_rewards: number
    }>(
      'SELECT rule, rule_version, expiry_schedule, program_schedule, time_zone, CASE WHEN EXISTS (SELECT 1 FROM rewards WHERE rewards.shop_id = shops.id) THEN 1 ELSE 0 END AS has_rewards ' +
        'FROM shops WHERE id = $1',
    ),
    idem: f.lookup<{ id: string; idem_key: string }>({ table: 'events', columns: 'id, idem_key', column: 'idem_key', keyType: 'text' }),
    customersById: customersBy('id'),
    customersByEmail: customersBy('email_lower'),
    customersByErasedEmail: customersBy('erased_email_sha'),
    ordersById: ordersBy('id'),
    ordersByCustomer: ordersBy('customer_id'),
    ordersByEmail: ordersBy('email_lower'),
    ledgerOfOrders: f.lookup<LedgerRead>({
      table: 'ledger',
      columns: 'id, order_id, customer_id, guest_email, points, amount_minor, currency, rate, rule_version, available_us, multiplier',
      column: 'order_id',
      keyType: 'bigint',
    }),
    /** The earnings of orders, by order (its primary key). */
    earningsOfOrders: f.lookup<EarningRead>({
      table: 'order_earnings',
      columns: 'order_id, customer_id, processed_us, base',
      column: 'order_id',
      keyType: 'bigint',
    }),
    /** Customers' earnings processed within ranges: `[customer_id, lo, hi]` triples (order_earnings_customer). */
    earningsInRanges: f.ranges<EarningRead>({
      table: 'order_earnings',
      columns: 'order_id, customer_id, processed_us, base',
      column: 'customer_id',
      range: 'processed_us',
    }),
    /** The expiry warnings appended for customers (their primary key). */
    warnings: f.lookup<{ customer_id: number; expires_us: number; days_before: number | null }>({
      table: 'expiry_warnings',
      columns: 'customer_id, expires_us, days_before',
      column: 'customer_id',
      keyType: 'bigint',
    }),
    /** Points held under guest e-mails (ledger_guest, a partial index of the rows without a customer). */
    guestHoldings: f.lookup<{ order_id: number; guest_email: string; points: number }>({
      table: 'ledger',
      columns: 'order_id, guest_email, points',
      column: 'guest_email',
      keyType: 'text',
      where: 'AND customer_id IS NULL',
    }),
    /** Orders whose webhooks embedded these customers, by their events (events_customer). */
    embeddingEvents: f.lookup<{ resource_id: number | null }>({
      table: 'events',
      columns: 'resource_id',
      column: 'customer_id',
      keyType: 'bigint',
      where: "AND topic = 'order/hook_created'",
    }),
    /** The same, for orders whose events were pruned (src/repos/prune.ts keeps these links). */
    embeddingLinks: f.lookup<{ resource_id: number }>({
      table: 'order_customer_links',
      columns: 'order_id AS resource_id',
      column: 'customer_id',
      keyType: 'bigint',
    }),
    /** Each customer's lots: the net of their entries per availability date, and of the expired ones. */
    lots: f.lookup<{ customer_id: number; available_us: number; points: number; expired: number }>({
      table: 'ledger',
      columns: 'customer_id, available_us, points, reason',
      column: 'customer_id',
      keyType: 'bigint',
      select: "t.customer_id, t.available_us, sum(t.points) AS points, sum(CASE WHEN t.reason = 'expired' THEN t.points ELSE 0 END) AS expired",
      groupBy: 't.customer_id, t.available_us',
    }),
    redemptionsById: f.lookup<Selectable<RedemptionsTable>>({ table: 'redemptions', columns: '*', column: 'id', keyType: 'text' }),
    redemptionsByIdem: f.lookup<Selectable<RedemptionsTable>>({ table: 'redemptions', columns: '*', column: 'idem_key', keyType: 'text' }),
    adjustmentsByIdem: f.lookup<Selectable<AdjustmentsTable>>({ table: 'adjustments', columns: '*', column: 'idem_key', keyType: 'text' }),
    /** A reward a batch's claims name, by its key: the shop and the shop's number of it. */
    reward: f.text<Selectable<RewardsTable>>('SELECT * FROM rewards WHERE shop_id = $1 AND id = $2'),
    /**
     * A pool's next codes after its cursor, in upload order: $5 of them at most (reward_codes_next);
     * `held` 1 for a code a claim of the shop holds already (claims_code), which the decider passes over.
     */
    nextCodes: f.text<{ id: number; code: string; held: number }>(
      'SELECT id, code, CASE WHEN EXISTS (SELECT 1 FROM claims c WHERE c.code = reward_codes.code AND c.shop_id = reward_codes.shop_id) THEN 1 ELSE 0 END AS held ' +
        'FROM reward_codes WHERE reward_id = $1 AND shop_id = $2 AND id > (SELECT code_cursor FROM rewards WHERE shop_id = $3 AND id = $4) ORDER BY id LIMIT $5',
    ),
    /** The shop's catalogue as reward.available needs it (rewards_shop), in a shop that has rewards. */
    rewardCatalogue: f.text<{ id: number; points: number; min_tier: string | null; active: number; codes: string; codes_added: number; codes_issued: number }>(
      'SELECT id, points, min_tier, active, codes, codes_added, codes_issued FROM rewards WHERE shop_id = $1',
    ),
    /** The reward notices of customers (their primary key). */
    rewardNotices: f.lookup<{ customer_id: number; reward_id: number; reached: number; sent_us: number | null }>({
      table: 'reward_notices',
      columns: 'customer_id, reward_id, reached, sent_us',
      column: 'customer_id',
      keyType: 'bigint',
    }),
    /** A customer's notice of a reward, as the decider left it (the customer's lock orders its writers). */
    upsertNotices: f.insert({
      table: 'reward_notices',
      columns: ['shop_id', 'customer_id', 'reward_id', 'reached', 'sent_us'],
      types: ['bigint', 'bigint', 'bigint', 'smallint', 'bigint'],
      conflict: 'ON CONFLICT (customer_id, shop_id, reward_id) DO UPDATE SET reached = excluded.reached, sent_us = excluded.sent_us RETURNING 1',
    }),
    claimsById: f.lookup<Selectable<ClaimsTable>>({ table: 'claims', columns: '*', column: 'id', keyType: 'text' }),
    claimsByIdem: f.lookup<Selectable<ClaimsTable>>({ table: 'claims', columns: '*', column: 'idem_key', keyType: 'text' }),
    /** The claims still standing of customers a batch deletes (claims_customer): their codes are void with the delete. */
    liveClaimsOfCustomers: f.lookup<Selectable<ClaimsTable>>({
      table: 'claims',
      columns: '*',
      column: 'customer_id',
      keyType: 'bigint',
      where: 'AND cancelled_us IS NULL',
    }),
    /** What customers hold of imports: their import entries' net per date (ledger_customer, the reason checked on the customer's rows). */
    importHoldings: f.lookup<{ customer_id: number; available_us: number; points: number }>({
      table: 'ledger',
      columns: 'customer_id, available_us, points, reason',
      column: 'customer_id',
      keyType: 'bigint',
      select: 't.customer_id, t.available_us, sum(t.points) AS points',
      where: "AND reason = 'import'",
      groupBy: 't.customer_id, t.available_us',
    }),

    /** Referrals by the hash of the friend's e-mail (their primary key), and by referrer (referrals_referrer): only in shops that offer referrals. */
    referralsByHash: f.lookup<Selectable<ReferralsTable>>({ table: 'referrals', columns: '*', column: 'email_hash', keyType: 'text' }),
    referralsByReferrer: f.lookup<Selectable<ReferralsTable>>({ table: 'referrals', columns: '*', column: 'referrer_id', keyType: 'bigint' }),
    /** A referral written only at the revision the batch loaded, as customers are. */
    upsertReferrals: f.insert({
      table: 'referrals',
      columns: REFERRAL_COLUMNS.names,
      types: REFERRAL_COLUMNS.types,
      conflict: `ON CONFLICT (email_hash, shop_id, referrer_id) DO UPDATE SET ${excludedSet(REFERRAL_COLUMNS.names, ['shop_id', 'email_hash', 'id', 'referrer_id', 'claimed_us'])} WHERE referrals.rev = excluded.rev - 1 RETURNING 1`,
    }),
    /** The links of e-mails to their holders (migration 0034): by e-mail hash (their key), and by holder (email_holders_holder). */
    holdersByHash: f.lookup<Selectable<EmailHoldersTable>>({ table: 'email_holders', columns: '*', column: 'email_hash', keyType: 'text' }),
    holdersByHolder: f.lookup<Selectable<EmailHoldersTable>>({ table: 'email_holders', columns: '*', column: 'holder', keyType: 'text' }),
    /** A link once: one stored already is nothing (links are only ever added). */
    insertHolders: f.insert({
      table: 'email_holders',
      columns: ['shop_id', 'email_hash', 'holder'],
      types: ['bigint', 'text', 'text'],
      conflict: 'ON CONFLICT (email_hash, shop_id, holder) DO NOTHING RETURNING 1',
    }),
    /** The friends a member belongs to (their key), and a friend's members (referral_members_friend). */
    membersByMember: f.lookup<Selectable<ReferralMembersTable>>({ table: 'referral_members', columns: '*', column: 'member', keyType: 'text' }),
    membersByFriend: f.lookup<Selectable<ReferralMembersTable>>({ table: 'referral_members', columns: '*', column: 'email_hash', keyType: 'text' }),
    insertMembers: f.insert({
      table: 'referral_members',
      columns: ['shop_id', 'member', 'email_hash'],
      types: ['bigint', 'text', 'text'],
      conflict: 'ON CONFLICT (member, shop_id, email_hash) DO NOTHING RETURNING 1',
    }),

    upsertCustomers: upsert('customers', CUSTOMER_COLUMNS.names, CUSTOMER_COLUMNS.types),
    upsertOrders: upsert('orders', ORDER_COLUMNS.names, ORDER_COLUMNS.types),
    /** For rows whose indexed columns hold what was loaded: SQLite rewrites an index entry whenever its column is SET. */
    updateCustomers: upsert('customers', CUSTOMER_COLUMNS.names, CUSTOMER_COLUMNS.types, CUSTOMER_INDEXED),
    updateOrders: upsert('orders', ORDER_COLUMNS.names, ORDER_COLUMNS.types, ORDER_INDEXED),
    insertLedger: f.insert({ table: 'ledger', columns: LEDGER_COLUMNS.names, types: LEDGER_COLUMNS.types, conflict: 'RETURNING 1' }),
    upsertEarnings: f.insert({
      table: 'order_earnings',
      columns: ['shop_id', 'order_id', 'customer_id', 'processed_us', 'base'],
      types: ['bigint', 'bigint', 'bigint', 'bigint', 'bigint'],
      conflict:
        'ON CONFLICT (order_id, shop_id) DO UPDATE SET customer_id = excluded.customer_id, processed_us = excluded.processed_us, base = excluded.base RETURNING 1',
    }),
    deleteEarnings: f.delete({ table: 'order_earnings', column: 'order_id', keyType: 'bigint' }),
    // Birthdays (migration 0040, src/batch/decide-birthdays.ts).
    /** The birthdays of customers (their primary key). */
    birthdays: f.lookup<{ customer_id: number; month: number; day: number; source: string; set_us: number; customer_set_us: number | null }>({
      table: 'birthdays',
      columns: 'customer_id, month, day, source, set_us, customer_set_us',
      column: 'customer_id',
      keyType: 'bigint',
    }),
    /** The years customers were paid a birthday in (the primary key of birthday_rewards). */
    birthdayYears: f.lookup<{ customer_id: number; year: number }>({
      table: 'birthday_rewards',
      columns: 'customer_id, year',
      column: 'customer_id',
      keyType: 'bigint',
    }),
    /** A birthday as the decider left it (the customer's lock orders its writers). */
    upsertBirthdays: f.insert({
      table: 'birthdays',
      columns: ['shop_id', 'customer_id', 'month', 'day', 'source', 'set_us', 'customer_set_us'],
      types: ['bigint', 'bigint', 'smallint', 'smallint', 'text', 'bigint', 'bigint'],
      conflict:
        'ON CONFLICT (customer_id, shop_id) DO UPDATE SET month = excluded.month, day = excluded.day, source = excluded.source, set_us = excluded.set_us, ' +
        'customer_set_us = excluded.customer_set_us RETURNING 1',
    }),
    /** A birthday paid: a year another batch paid meanwhile returns nothing, and the batch runs again (exactly once a year). */
    insertBirthdayRewards: f.insert({
      table: 'birthday_rewards',
      columns: ['shop_id', 'customer_id', 'year', 'points', 'paid_us'],
      types: ['bigint', 'bigint', 'bigint', 'bigint', 'bigint'],
      conflict: 'ON CONFLICT (customer_id, shop_id, year) DO NOTHING RETURNING 1',
    }),
    /** A deleted customer's birthday, erased with their other personal data. */
    deleteBirthdays: f.delete({ table: 'birthdays', column: 'customer_id', keyType: 'bigint' }),
    /**
     * An expiry warning once per customer, date and lead time: the row keeps the nearest lead time
     * warned at, and only a nearer one replaces it; a row another batch wrote meanwhile returns
     * nothing, and the batch runs again (the customer's lock makes it rare).
     */
    insertWarnings: f.insert({
      table: 'expiry_warnings',
      columns: ['shop_id', 'customer_id', 'expires_us', 'points', 'created_us', 'days_before'],
      types: ['bigint', 'bigint', 'bigint', 'bigint', 'bigint', 'bigint'],
      conflict:
        'ON CONFLICT (customer_id, shop_id, expires_us) DO UPDATE SET points = excluded.points, created_us = excluded.created_us, days_before = excluded.days_before ' +
        'WHERE expiry_warnings.days_before IS NULL OR expiry_warnings.days_before > excluded.days_before RETURNING 1',
    }),
    /** The batch's customers' entries added to the report's rollup, one row per key (migration 0020). */
    addLedgerDays: f.insert({
      table: 'ledger_days',
      columns: ['shop_id', 'day', 'available_day', 'reason', 'points'],
      types: ['bigint', 'text', 'bigint', 'text', 'bigint'],
      conflict: 'ON CONFLICT (shop_id, day, available_day, reason) DO UPDATE SET points = ledger_days.points + excluded.points RETURNING 1',
    }),
    /** What the batch adds to the dashboard's rollups (migration 0036, src/batch/dashboard-rollup.ts), one row per key. */
    addDashboardDays: f.insert({
      table: 'dashboard_days',
      columns: ['shop_id', 'day', 'figure', 'key', 'n', 'amount'],
      types: ['bigint', 'text', 'text', 'text', 'bigint', 'bigint'],
      conflict:
        'ON CONFLICT (shop_id, day, figure, key) DO UPDATE SET n = dashboard_days.n + excluded.n, amount = dashboard_days.amount + excluded.amount RETURNING 1',
    }),
    addMemberOrderDays: f.insert({
      table: 'member_order_days',
      columns: ['shop_id', 'day', 'customer_id', 'orders'],
      types: ['bigint', 'text', 'bigint', 'bigint'],
      conflict: 'ON CONFLICT (shop_id, customer_id, day) DO UPDATE SET orders = member_order_days.orders + excluded.orders RETURNING 1',
    }),
    addRepeatDays: f.insert({
      table: 'repeat_days',
      columns: ['shop_id', 'day', 'prev_day', 'prev2_day', 'n'],
      types: ['bigint', 'text', 'text', 'text', 'bigint'],
      conflict: 'ON CONFLICT (shop_id, day, prev_day, prev2_day) DO UPDATE SET n = repeat_days.n + excluded.n RETURNING 1',
    }),
    /** The orders by day of the members whose counted orders a batch changes: what their repeat keys were (src/batch/dashboard-rollup.ts). */
    memberOrderDays: f.lookup<{ customer_id: number; day: string; orders: number }>({
      table: 'member_order_days',
      columns: 'customer_id, day, orders',
      column: 'customer_id',
      keyType: 'bigint',
    }),
    // Another process claimed one of these idempotency keys meanwhile: the batch runs again.
    insertEvents: claimOnce('events', EVENT_COLUMNS.names, EVENT_COLUMNS.types),
    insertRedemptions: claimOnce('redemptions', REDEMPTION_COLUMNS.names, REDEMPTION_COLUMNS.types),
    insertAdjustments: claimOnce('adjustments', ADJUSTMENT_COLUMNS.names, ADJUSTMENT_COLUMNS.types),
    // Any key taken meanwhile (the Idempotency-Key, or the code) runs the batch again: every row must come back.
    insertClaims: f.insert({ table: 'claims', columns: CLAIM_COLUMNS.names, types: CLAIM_COLUMNS.types, conflict: 'ON CONFLICT DO NOTHING RETURNING 1' }),
    /**
     * A pool's cursor moves only from where the batch found it: a pool another batch took from meanwhile runs this one again.
     * The $3 codes it passed over (held by a claim already) come off its codes added; an upload meanwhile adds to what is stored.
     */
    movePoolCursor: f.text(
      'UPDATE rewards SET code_cursor = $1, codes_issued = $2, codes_added = codes_added - $3 WHERE shop_id = $4 AND id = $5 AND code_cursor = $6 RETURNING 1',
    ),
    cancelClaim: f.update({
      table: 'claims',
      set: 'cancelled_us = $3, cancel_available_after = $4',
      column: 'id',
      keyType: 'text',
      where: 'AND cancelled_us IS NULL',
    }),
    /** A cancel applies only to a redemption still uncancelled; the customer's lock makes that so. */
    cancelRedemption: f.update({
      table: 'redemptions',
      set: 'cancelled_at = $3, cancelled_us = $4, cancel_available_after = $5',
      column: 'id',
      keyType: 'text',
      where: 'AND cancelled_us IS NULL',
    }),
    // Events redacted already (by an earlier delete, or stored so after it) are not written again:
    // a customer deleted twice would otherwise rewrite their whole history, page by page.
    redactCustomerEvents: f.update({
      table: 'events',
      set: 'body = $3, headers = $4',
      column: 'customer_id',
      keyType: 'bigint',
      unlessHeld: ['body', 'headers'],
    }),
    redactOrderEvents: f.update({
      table: 'events',
      set: 'body = $3, headers = $4',
      column: 'resource_id',
      keyType: 'bigint',
      where: "AND topic = 'order/hook_created'",
      unlessHeld: ['body', 'headers'],
    }),
    redactGuestEmails: f.update({ table: 'ledger', set: 'guest_email = NULL', column: 'order_id', keyType: 'bigint', where: 'AND guest_email IS NOT NULL' }),
    appendFeed: f.appendFeed,
    // Activities (src/batch/decide-activities.ts): a customer's reports, read whole; written only at the revision loaded.
    activitiesOfCustomers: f.lookup<Selectable<ActivitiesTable>>({ table: 'activities', columns: '*', column: 'customer_id', keyType: 'bigint' }),
    upsertActivities: f.insert({
      table: 'activities',
      columns: ACTIVITY_COLUMNS.names,
      types: ACTIVITY_COLUMNS.types,
      conflict: `ON CONFLICT (shop_id, customer_id, action, reference) DO UPDATE SET ${excludedSet(ACTIVITY_COLUMNS.names, ['shop_id', 'customer_id', 'action', 'reference'])} WHERE activities.rev = excluded.rev - 1 RETURNING 1`,
    }),
  }
}
