import type { ColumnType, Generated } from 'kysely'
import type { CustomerFields, OrderFields } from '../domain/merge.ts'

// Row types of the database. They stay inside src/db and src/repos: the rest of the
// program speaks in the domain's records. Flags are 0/1 integers on both
// databases, money is integer minor units, instants are epoch microseconds.

export interface ShopsTable {
  id: Generated<number>
  name: string
  created_at: string
  rule: string | null
  rule_version: Generated<number>
  /** JSON of the expiry schedule (src/loyalty/expiry-schedule.ts); null: the rule's days since ever. */
  expiry_schedule: Generated<string | null>
  /** JSON of the loyalty program's schedule (src/loyalty/program.ts); null: the rule's program since ever (migration 0022). */
  program_schedule: Generated<string | null>
  /** The IANA time zone its days are counted in (src/domain/calendar.ts); UTC until set (migration 0036). */
  time_zone: Generated<string>
}

export interface ApiKeysTable {
  id: Generated<number>
  shop_id: number
  key_hash: string
  hint: string
  created_at: string
  last_used_at: string | null
  revoked_at: string | null
  /** secret (sk_…), publishable (pk_…) or signing (ss_…; migration 0031). */
  kind: ColumnType<KeyKind, KeyKind | undefined, never>
  /** A signing secret sealed under SECRETS_KEY; null for the other kinds. */
  sealed_secret: string | null
}

export type KeyKind = 'secret' | 'publishable' | 'signing'

export interface KeyOriginsTable {
  key_id: number
  origin: string
}

export interface EventsTable {
  id: string
  shop_id: number
  topic: string
  resource_id: number | null
  customer_id: number | null
  received_at: string
  received_us: number
  body: Uint8Array
  headers: string
  outcome: string
  duplicate_of: string | null
  errors: string | null
  /** The sender's Idempotency-Key or Webhook-Id (hashed), on the event that claimed it; unique per shop. */
  idem_key: string | null
  /** The event a console replay repeats (src/routes/admin/replay.ts). */
  replay_of?: string | null
}

/** Columns that guard and deduplicate writes of a customer or an order. */
interface Revisioned {
  /** Field clocks as JSON, {field: [version_us, arrival_us]}; null on rows from before per-field clocks. */
  clocks: string | null
  /** Bumped by every write; a write requires the revision it loaded (several processes converge). */
  rev: number
  last_hash: string | null
  last_event_id: string | null
}

/** A record's field as its column holds it: a flag as 0/1, a list as JSON text. */
type Column<T> = T extends boolean ? number : T extends readonly unknown[] ? string : T
/** A column per field of the record (its body's fields, src/schemas/webhooks.ts). */
type FieldColumns<Fields> = { [F in keyof Fields]: Column<Fields[F]> }

export interface CustomersTable extends Revisioned, FieldColumns<CustomerFields> {
  shop_id: number
  id: number
  email_lower: string | null
  deleted: number
  version_us: number
  arrival_us: number
  /** The version of the newest delete ever received; kept when the customer registers again. */
  erased_us: number | null
  erased_email_sha: string | null
  /** The earliest version of a webhook that said is_newsletter: true (migration 0022). */
  newsletter_us: number | null
  /** JSON {signup: [points, available_us], newsletter: […], imported_tier, imported_at, import_expiry: [lot_us, expires_us]}; null when none. */
  bonuses: string | null
  /** The tier the change feed last announced; null for none. */
  tier: string | null
  /** When the tier may next change by time alone: the tier sweep's index. */
  tier_check_us: number | null
  /** When the lot of an import's expires_at falls due, until it is settled: the expiry sweep's index (migration 0029). */
  expiry_check_us: number | null
  /** The arrival of the first webhook that told of them: when they became a member without a created_at (migration 0036). */
  first_seen_us?: number | null
}

/** Each order's base points credited to a live customer, where there are any (migration 0022): what VIP tiers count. */
export interface OrderEarningsTable {
  shop_id: number
  order_id: number
  customer_id: number
  /** The order's processed_at (or first arrival). */
  processed_us: number
  /** Its points under the rule before any multiplier or exclusion. */
  base: number
}

/** An expiry warning appended to the change feed (points.expiring): one row per customer and expiry date (migration 0022). */
export interface ExpiryWarningsTable {
  shop_id: number
  customer_id: number
  expires_us: number
  points: number
  created_us: number
  /** The nearest lead time the date was warned of at (migration 0039); a nearer one may follow, a farther one never. */
  days_before: number | null
}

/** A customer's birthday, month and day (migration 0040): personal data, deleted with the customer's. */
export interface BirthdaysTable {
  shop_id: number
  customer_id: number
  month: number
  day: number
  source: string
  set_us: number
  customer_set_us: number | null
}

/** A birthday paid: one row per customer and local year (migration 0040), the key of exactly once. */
export interface BirthdayRewardsTable {
  shop_id: number
  customer_id: number
  year: number
  points: number
  paid_us: number
}

/** Per customer and reward: whether their balance reached its points since it was last below them, and the last reward.available (migration 0039). */
export interface RewardNoticesTable {
  shop_id: number
  customer_id: number
  reward_id: number
  reached: number
  sent_us: number | null
}

/** Per shop with rewards: up to when the sweep has looked for points that became available by time alone (migration 0039). */
export interface RewardNoticeSweepsTable {
  shop_id: number
  swept_us: number
}

export interface OrdersTable extends Revisioned, FieldColumns<OrderFields> {
  shop_id: number
  id: number
  email_lower: string | null
  cancelled_us: number | null
  processed_us: number | null
  customer_id: number | null
  customer_link_us: number | null
  customer_snapshot_us: number | null
  updated_us: number | null
  arrival_us: number
  first_arrival_us: number | null
  /** JSON {customer id: newest snapshot_us} of every customer the order's webhooks embedded. */
  customer_snapshots: string | null
  /** JSON {customer id: oldest snapshot_us} of the same customers; null on rows written before it (read as customer_snapshots). */
  customer_first_snapshots: string | null
  /** A hash of the e-mail erasure removed, while the e-mail stays erased. */
  erased_email_sha: string | null
}

/** The points report's rollup of customers' entries (migration 0020). */
export interface LedgerDaysTable {
  shop_id: number
  /** The day the entries were written, UTC, YYYY-MM-DD. */
  day: string
  /** available_us in whole days since 1970-01-01. */
  available_day: number
  reason: string
  points: number
}

/** The dashboard's rollup of customers and orders by the shop's local day (migration 0036, src/loyalty/dashboard-facts.ts). */
export interface DashboardDaysTable {
  shop_id: number
  /** A local date of the shop, YYYY-MM-DD. */
  day: string
  /** members, orders, tier or moves. */
  figure: string
  /** orders: currency|member|earning; tier: the tier's name ('' for none); moves: up or down; members: ''. */
  key: string
  n: number
  /** orders: their subtotals in minor units. */
  amount: number
}

/** The orders counted of each member by the shop's local day (migration 0036): the repeat rate's members. */
export interface MemberOrderDaysTable {
  shop_id: number
  day: string
  customer_id: number
  orders: number
}

/** Members' orders keyed by their local day and the days of the two orders before (migration 0036, RepeatDayRow): the repeat rate. */
export interface RepeatDaysTable {
  shop_id: number
  day: string
  /** '' for none. */
  prev_day: string
  prev2_day: string
  n: number
}

export interface LedgerTable {
  id: Generated<number>
  shop_id: number
  order_id: number | null
  customer_id: number | null
  guest_email: string | null
  points: number
  reason: string
  amount_minor: number
  currency: string | null
  rate: string
  rule_version: number
  created_at: string
  available_at: string
  available_us: number
  /** The redemption an entry spends or gives back. */
  redemption_id: string | null
  /** 1 on a reversal that took the customer's available points below zero. */
  debt: number
  /** The manual adjustment an adjusted_manually entry belongs to. */
  adjustment_id?: string | null
  /** The VIP tier's multiplier of an order's award, as a decimal; null: 1 (migration 0022). */
  multiplier?: string | null
}

export interface RedemptionsTable {
  shop_id: number
  /** A UUIDv7: ordered by creation. */
  id: string
  customer_id: number
  points: number
  reference: string
  created_at: string
  created_us: number
  available_after: number
  /** The Idempotency-Key, hashed; unique per shop. */
  idem_key: string | null
  request_hash: string
  /** JSON [[available_us, points], …]: the lots it spent. */
  entries: string
  cancelled_at: string | null
  cancelled_us: number | null
  cancel_available_after: number | null
}

/** A customer an order embedded, recorded when the order's events that say so are pruned. */
export interface OrderCustomerLinksTable {
  shop_id: number
  customer_id: number
  order_id: number
}

/**
 * The change feed: one row per batch and shop, its entries as JSON `[[type, data], …]`, numbered
 * `first_position` to `position` in order (migration 0010).
 */
export interface FeedTable {
  position: number
  first_position: number
  shop_id: number
  /** The shop's own positions of the row's entries, `shop_first_position` to `shop_position` (migration 0014): what readers see. */
  shop_position: number
  shop_first_position: number
  created_us: number
  entries: string
}

/** Each shop's last feed position (migration 0014), moved by a batch while it holds feed_head's lock. */
export interface FeedShopHeadTable {
  shop_id: number
  position: number
}

/** The deployment (one row, migration 0013): its id tells this database's feed apart on a shared NATS. */
export interface DeploymentTable {
  one: Generated<number>
  id: string
}

/** The one row (id 1) that hands out feed positions: its lock orders the batches' commits. */
export interface FeedHeadTable {
  id: number
  position: number
}

/** How far the NATS relay has published, per stream: every position up to this one. */
export interface ChangeRelayTable {
  stream: string
  position: number
  updated_us: number
}

// The operator console (migration 0007).

export interface AdminsTable {
  id: Generated<number>
  name: string
  key_hash: string
  hint: string
  created_at: string
  last_used_at: string | null
  revoked_at: string | null
  /** operator (looks and changes) or viewer (looks only); migration 0012. */
  role: Generated<'operator' | 'viewer'>
}

export interface AdminSessionsTable {
  /** SHA-256 of the cookie's token: the token itself is never stored. */
  token_hash: string
  admin_id: number
  created_at: string
  expires_us: number
}

export interface AuditLogTable {
  id: Generated<number>
  /** The operator; 0 for the command line, whose OS user is in `operator`. */
  admin_id: number
  operator: string
  action: string
  shop_id: number | null
  target: string | null
  /** JSON of what changed. */
  detail: string | null
  created_at: string
}

export interface AdjustmentsTable {
  shop_id: number
  /** A UUIDv7: ordered by creation. */
  id: string
  customer_id: number
  points: number
  reason: string
  operator: string
  created_at: string
  created_us: number
  available_after: number
  idem_key: string | null
  request_hash: string
}

/** Every version of a shop's points rule and when it took effect (migration 0015). */
export interface RuleVersionsTable {
  shop_id: number
  version: number
  /** JSON of the rule; null is the default rule. */
  rule: string | null
  effective_us: number
  /** Who wrote it: the operator's name, or `command line (<OS user>)`; null when unknown (migration 0021). */
  changed_by: string | null
}

// Outgoing webhooks (migration 0016).

export interface SubscriptionsTable {
  id: Generated<number>
  shop_id: number
  url: string
  /** The type filter as a JSON list of patterns. */
  types: string
  /** The signing secret, sealed (src/keys/secret-box.ts). */
  secret: string
  /** During a rotation's grace: the secret it replaced, sealed, and until when it signs too. */
  old_secret: string | null
  old_secret_until_us: number | null
  created_us: number
  /** Every entry of the shop up to this position is delivered, or not for this subscription. */
  position: number
  /** Failed attempts at the entry after `position`. */
  attempts: Generated<number>
  /** No attempt before this instant (epoch µs). */
  next_attempt_us: Generated<number>
  /** When the entry after `position` first failed; null while none fails. */
  retrying_since_us: number | null
  /** 1 once an entry failed for SUBSCRIPTIONS_RETRY_HOURS: no more attempts until a replay. */
  failing: Generated<number>
  last_error: string | null
  /** While a delivery is in flight: until when it holds the subscription (epoch µs), and its attempt's token; null otherwise. */
  lease_until_us: number | null
  lease_owner: string | null
  /** webhook (signed POSTs to `url`) or klaviyo (Klaviyo's Create Event API; `secret` holds its private key, sealed); migration 0038. */
  destination: Generated<string>
  /** klaviyo: the private key masked (pk_…a1b2), as lists show it; null for a webhook. */
  key_hint: string | null
  /** klaviyo: the shop's page a customer's referral link points at (?ref=<code> added); null for none. */
  referral_url: string | null
}

export interface SubscriptionDeliveriesTable {
  subscription_id: number
  position: number
  type: string
  /** delivered, retrying or failed; Klaviyo's also skipped (no customer, or an erased one: not sent) and refused (Klaviyo refused the event for good) */
  status: string
  attempts: number
  response_status: number | null
  last_error: string | null
  updated_us: number
}

// Rewards (migrations 0026 to 0028).

/** A reward of a shop's catalogue; never deleted, only made inactive. */
export interface RewardsTable {
  /** Numbered within the shop (migration 0033): the key is (shop_id, id). */
  id: number
  shop_id: number
  name: string
  /** What a claim costs. */
  points: number
  /** fixed_amount, percentage, free_shipping or custom */
  kind: string
  /** fixed_amount: the amount in minor units; percentage: the whole percentage; else null. */
  value: number | null
  currency: string | null
  /** generated or pool */
  codes: string
  code_prefix: string | null
  min_tier: string | null
  active: number
  created_us: number
  updated_us: number
  /** A pool's codes: how many were added, how many handed out, and the id of the last one handed out. */
  codes_added: Generated<number>
  codes_issued: Generated<number>
  code_cursor: Generated<number>
}

/** A code of a reward's pool, numbered in upload order by id. */
export interface RewardCodesTable {
  id: Generated<number>
  shop_id: number
  reward_id: number
  code: string
  created_us: number
}

/** A claim: a redemption of the same id that bought a reward, and its code. */
export interface ClaimsTable {
  shop_id: number
  id: string
  customer_id: number
  reward_id: number
  /** The reward's name when it was claimed. */
  reward_name: string
  code: string
  points: number
  created_us: number
  available_after: number
  /** The Idempotency-Key, hashed; unique per shop. */
  idem_key: string | null
  request_hash: string
  cancelled_us: number | null
  cancel_available_after: number | null
}

/** A friend's claim of a referrer's code and what it has come to (migration 0032; src/batch/state.ts StoredReferral). */
export interface ReferralsTable {
  shop_id: number
  email_hash: string
  id: string
  referrer_id: number
  claimed_us: number
  self_by_email: number
  /** JSON: the referral terms in force at the claim. */
  terms: string
  /** JSON: the friend's orders' facts. */
  orders: string
  /** JSON: the friend's customers (migration 0034). */
  customers: string
  status: string
  reason: string
  order_id: number | null
  referrer_points: number
  referrer_available_us: number | null
  friend_customer_id: number | null
  friend_points: number
  friend_available_us: number | null
  friend_code: string | null
  friend_reward_id: number | null
  updated_us: number
  rev: number
}

/** A link between an e-mail, as the keyed hash of its normal form, and a customer (`c:ID`) or an order (`o:ID`) a webhook gave it to (migration 0034). */
export interface EmailHoldersTable {
  shop_id: number
  email_hash: string
  holder: string
}

/** A member (`e:HASH`, `c:ID`, `o:ID`) of a friend's identity, to find the friend's referrals again from it (migration 0034). */
export interface ReferralMembersTable {
  shop_id: number
  member: string
  email_hash: string
}

/** A points import of a file into a shop, from its start (migration 0030): unfinished until its last unit is committed. */
export interface ImportRunsTable {
  id: Generated<number>
  shop_id: number
  /** The SHA-256 of the file's bytes, hex: the same file again finishes the same row. */
  file_sha256: string
  state: 'unfinished' | 'finished'
  lines_total: number
  /** Lines committed, in the file's order: the furthest any run of the file got. */
  lines_done: number
  /** Who started it: an operator's name, or `command line (<OS user>)`. */
  started_by: string
  started_us: number
  updated_us: number
  finished_us: number | null
}

/** A shop's report of an action of a customer, and what it has come to (migration 0037, src/batch/decide-activities.ts). */
export interface ActivitiesTable {
  shop_id: number
  customer_id: number
  action: string
  /** The shop's own id of the action. */
  reference: string
  occurred_us: number
  reported_us: number
  /** 0: reported before the action took effect, or of a customer with an excluded tag. */
  eligible: number
  voided_us: number | null
  /** The points it holds now, and the lot they went to. */
  points: number
  available_us: number | null
  rev: number
}

export interface Tables {
  import_runs: ImportRunsTable
  rule_versions: RuleVersionsTable
  subscriptions: SubscriptionsTable
  subscription_deliveries: SubscriptionDeliveriesTable
  admins: AdminsTable
  admin_sessions: AdminSessionsTable
  audit_log: AuditLogTable
  adjustments: AdjustmentsTable
  order_customer_links: OrderCustomerLinksTable
  ledger: LedgerTable
  order_earnings: OrderEarningsTable
  expiry_warnings: ExpiryWarningsTable
  reward_notices: RewardNoticesTable
  reward_notice_sweeps: RewardNoticeSweepsTable
  birthdays: BirthdaysTable
  birthday_rewards: BirthdayRewardsTable
  ledger_days: LedgerDaysTable
  dashboard_days: DashboardDaysTable
  member_order_days: MemberOrderDaysTable
  repeat_days: RepeatDaysTable
  shops: ShopsTable
  api_keys: ApiKeysTable
  key_origins: KeyOriginsTable
  events: EventsTable
  customers: CustomersTable
  orders: OrdersTable
  redemptions: RedemptionsTable
  rewards: RewardsTable
  reward_codes: RewardCodesTable
  claims: ClaimsTable
  referrals: ReferralsTable
  email_holders: EmailHoldersTable
  referral_members: ReferralMembersTable
  feed: FeedTable
  feed_head: FeedHeadTable
  feed_shop_head: FeedShopHeadTable
  deployment: DeploymentTable
  change_relay: ChangeRelayTable
  activities: ActivitiesTable
}
