import type { CustomerRecord, OrderRecord } from '../domain/merge.ts'
import type { FieldError, Status, Topic } from '../domain/webhook.ts'
import type { Holder, Reason } from '../loyalty/ledger-plan.ts'
import type { BonusHolding } from '../loyalty/bonuses.ts'
import type { Basis } from '../loyalty/points.ts'
import type { ProgramSchedule } from '../loyalty/program.ts'
import type { Earning, TierFloor } from '../loyalty/tiers.ts'
import type { FriendOrder, ReferralReason, ReferralStatus } from '../loyalty/referrals.ts'
import type { ReferralHolding } from '../loyalty/referral-points.ts'
import type { ReferralTerms } from '../loyalty/program.ts'
import type { VersionedRule } from '../loyalty/rule.ts'
import type { StoredBirthday } from '../loyalty/birthdays.ts'
import type { RewardNotice } from '../loyalty/reward-notices.ts'
import type { FixedExpiry, Lot, LotEntry } from '../loyalty/wallet.ts'
import type { CommandOutcome } from './commands.ts'
import type { FeedEntry } from '../schemas/changes.ts'

export type { FeedEntry }

// What the store loads for a batch and what the decider hands back to be
// written. Keys of resources are `${shopId}:${id}`.

export const keyOf = (shopId: number, id: number | string) => `${shopId}:${id}`
/** A referral's key: one per friend (the hash of their e-mail) and referrer. */
export const referralKeyOf = (shopId: number, emailHash: string, referrerId: number) => `${shopId}:${emailHash}:${referrerId}`

/** A stored row of a resource: its record, the revision that guards its write, and its latest change. */
export interface Stored<R> {
  shopId: number
  record: R
  /** 0 for a row not yet in the database; each write stores rev + 1 and requires rev. */
  rev: number
  /** The body hash and event of the latest webhook that changed it: a copy of that webhook is a duplicate. */
  lastHash: string | null
  lastEventId: string | null
}

export interface StoredCustomer extends Stored<CustomerRecord> {
  /** A hash of the e-mail the customer had when a delete erased it (emailSha, src/batch/decide.ts). */
  erasedEmailSha: string | null
  /** What the loyalty program keeps on the customer (src/batch/decide-loyalty.ts). */
  loyalty: CustomerLoyalty
  /** The arrival of the first webhook that told of them (migration 0036); absent until stored (src/batch/dashboard-rollup.ts firstSeenOf). */
  firstSeenUs?: number | null
}

/** The customer's bonuses as the ledger holds them, and the tier last announced in the feed. */
export interface CustomerLoyalty {
  signup: BonusHolding | null
  newsletter: BonusHolding | null
  /** The tier the change feed last said the customer holds; null for none. */
  tier: string | null
  /** When the tier may next change by time alone (the tier sweep's index); null when it cannot. */
  tierCheckUs: number | null
  /** The tier a points import brought over, held for one tier window from the first import. */
  importedTier: TierFloor | null
  /** The instant of the customer's first import (what an imported tier counts from); null when never imported. */
  importedUs: number | null
  /** The lot of the customer's imported points, when its line set an expires_at: it expires then, not by the rule. */
  importExpiry: FixedExpiry | null
  /** When that lot falls due, until it has been settled then (the expiry sweep's index); null when nothing is due. */
  expiryCheckUs: number | null
  /** The last tier.expiring: the tier and the instant of the fall it warned of (once each); absent or null when none. */
  tierWarned?: { tier: string; atUs: number } | null
}

export const NO_LOYALTY: CustomerLoyalty = {
  signup: null,
  newsletter: null,
  tier: null,
  tierCheckUs: null,
  importedTier: null,
  importedUs: null,
  importExpiry: null,
  expiryCheckUs: null,
}

/** An order's earning credited to a customer (order_earnings), by order key in BatchState. */
export interface StoredEarning extends Earning {
  shopId: number
  customerId: number
}
export type StoredOrder = Stored<OrderRecord>

/** One ledger entry as the decider sees it, in the order it was written. */
export interface LedgerLine extends Holder {
  points: number
  basis: Basis
}

export interface BatchState {
  customers: Map<string, StoredCustomer>
  orders: Map<string, StoredOrder>
  /** The ledger of every loaded order, by order key (empty when it holds nothing). */
  ledger: Map<string, LedgerLine[]>
  rules: Map<number, VersionedRule>
  /** The loyalty program's schedule of each loaded shop (src/loyalty/program.ts). */
  programs: Map<number, ProgramSchedule>
  /** The IANA time zone of each loaded shop, in which its days are counted (src/domain/calendar.ts); UTC when absent. */
  timeZones: Map<number, string>
  /**
   * The earnings loaded (order_earnings), by order key: those of the orders the batch names, and
   * those of the customers in play within `earningsRanges`.
   */
  earnings: Map<string, StoredEarning>
  /**
   * Per customer key, the ranges [lo, hi] of processed_at whose earnings are all loaded; null
   * when every earning is (a state built in memory). The decider asks for more when it needs
   * more (NeedMore, src/batch/decide-loyalty.ts).
   */
  earningsRanges: Map<string, [number, number][]> | null
  /** E-mails (`${shopId}:${email}`) whose erased customers are all loaded; null when every one is (a state built in memory). */
  erasedEmailsKnown: Set<string> | null
  /**
   * Expiry warnings already appended, for the customers a warn command names: by
   * `${shopId}:${customerId}:${expires_us}`, the nearest lead time (days) the date was warned of at
   * (null: before lead times were kept, at a lead time not known).
   */
  warned: Map<string, number | null>
  /** Event ids by `${shopId}:${idemKey}`, for the keys the batch carries. */
  idem: Map<string, string>
  /** Orders with points held under a guest e-mail, by `${shopId}:${email}`. */
  guestOrders: Map<string, number[]>
  /**
   * The lots of customers whose balance the batch must know, by customer key: those a command
   * names and those holding points of the loaded orders (locked, src/write/load.ts).
   */
  wallets: Map<string, Lot[]>
  /** Redemptions the batch's commands name, by `${shopId}:${redemptionId}`. */
  redemptions: Map<string, StoredRedemption>
  /** Redemption ids by `${shopId}:${idemKey}`, for the keys the batch's redemptions carry. */
  redemptionIdem: Map<string, string>
  /** Stored adjustments by `${shopId}:${idemKey}`, for the keys the batch's adjustments carry. */
  adjustmentIdem: Map<string, StoredAdjustment>
  /** The rewards the batch's claims name, by `${shopId}:${rewardId}`. */
  rewards: Map<string, StoredReward>
  /** Of each of those with a pool: its next codes after its cursor, in upload order, as many as the batch's claims of it (or as the decider asked for). */
  poolCodes: Map<string, PoolCode[]>
  /**
   * The pools (reward keys) whose codes after the cursor are all in `poolCodes`; null when every
   * pool's are (a state built in memory). A claim that finds no code it may hand out in a pool
   * not loaded to its end asks for more (NeedMore, src/batch/decide-loyalty.ts).
   */
  poolsLoadedToEnd: Set<string> | null
  /** Claims the batch's commands name (cancels, and the claims of cancelled redemptions), by `${shopId}:${claimId}`. */
  claims: Map<string, StoredClaim>
  /** Claim ids by `${shopId}:${idemKey}`, for the keys the batch's claims carry. */
  claimIdem: Map<string, string>
  /** What the customers the batch imports hold of imports, by customer key: the net per availability date. */
  imported: Map<string, LotEntry[]>
  /**
   * Referrals (src/batch/decide-referrals.ts), by referralKeyOf: those of the friends the batch
   * reaches and of its claims, and every referral of their referrers.
   */
  referrals: Map<string, StoredReferral>
  /** The keyed hash of each normalised e-mail in play (`${shopId}:${email}`), in shops that offer referrals; the load computes them. */
  referralHashes: Map<string, string>
  /** Referrer keys (`${shopId}:${customerId}`) whose referrals are all in `referrals`; null when every one is (a state built in memory). */
  referrersLoaded: Set<string> | null
  /**
   * Links stored between e-mails and their holders (src/loyalty/referral-friend.ts), by
   * `${shopId}:${emailHash}`: the holders (`c:ID`, `o:ID`) of each hash loaded. Those of the friends
   * loaded are whole: every holder of their e-mails, every e-mail of their customers.
   */
  heldEmails: Map<string, Set<string>>
  /** The members (`e:HASH`, `c:ID`, `o:ID`) stored of each friend loaded, by `${shopId}:${emailHash}`. */
  friendMembers: Map<string, Set<string>>
  /** Orders a friend reaches that the batch does not touch, by order key: read for the referral's facts, never settled. */
  friendOrders: Map<string, StoredOrder>
  /** Friends (`${shopId}:${emailHash}`) whose links, members, orders and referrals are all loaded; null when every one is (a state built in memory). */
  friendsLoaded: Set<string> | null
  /** The catalogue of each shop that has rewards, for reward.available (src/batch/decide-notices.ts); loaded on the write path only. */
  noticeRewards: Map<number, NoticeReward[]>
  /** The notices (reward_notices) of the customers whose lots are loaded, by `${shopId}:${customerId}:${rewardId}`; absent: none yet. */
  rewardNotices: Map<string, RewardNotice>
  /** The birthdays of the customers a birthday command names, by customer key (src/batch/decide-birthdays.ts); absent: none loaded. */
  birthdays?: Map<string, StoredBirthday>
  /** The years each of those customers was paid a birthday in, by customer key (birthday_rewards). */
  birthdayYears?: Map<string, number[]>
  /** Every report (activities) of the customers the batch's activity commands name, by customer key (src/batch/decide-activities.ts). */
  activities: Map<string, StoredActivity[]>
}

/** A shop's report of an action of a customer, and what it has come to (migration 0037). */
export interface StoredActivity {
  shopId: number
  customerId: number
  action: string
  reference: string
  occurredUs: number
  /** When it was first reported. */
  reportedUs: number
  /** Not eligible when reported (before the action took effect, or an excluded tag): it never takes a slot. */
  eligible: boolean
  /** Voided (DELETE): it takes no slot. */
  voidedUs: number | null
  /** The points it holds now (0 unless awarded), and the lot they went to. */
  points: number
  availableUs: number | null
  /** 0 for a row not yet stored; each write stores rev + 1 and requires rev. */
  rev: number
}

/** A reward of the catalogue as reward.available needs it. */
export interface NoticeReward {
  id: number
  points: number
  minTier: string | null
  active: boolean
  /** A pool's codes not handed out yet, as loaded; null for generated codes. */
  codesLeft: number | null
  /** The codes handed out, as loaded (a claim of the batch adds to them). */
  codesIssued: number
}

/** A friend's claim of a referrer's code, and what it has come to (the table referrals, migration 0032). */
export interface StoredReferral {
  shopId: number
  id: string
  /** The friend's normalised e-mail as a keyed hash (src/loyalty/referrals.ts); never the e-mail. */
  emailHash: string
  referrerId: number
  claimedUs: number
  /** The referrer's e-mail was the friend's at the claim. */
  selfByEmail: boolean
  /** The terms in force at the claim. */
  terms: ReferralTerms
  /** The friend's orders, as the webhooks last told them, and the friend's customers (src/loyalty/referral-friend.ts). */
  orders: FriendOrder[]
  customers: number[]
  status: ReferralStatus
  reason: ReferralReason
  orderId: number | null
  /** What the ledger holds of it for the referrer, and for the friend's customer. */
  referrer: ReferralHolding | null
  friend: (ReferralHolding & { customerId: number }) | null
  /** The code of the friend's reward, handed out at the claim; null when none. */
  friendCode: string | null
  friendRewardId: number | null
  updatedUs: number
  rev: number
}

/** A reward as a claim needs it; a pool's cursor is guarded by its write (src/write/save.ts). */
export interface StoredReward {
  shopId: number
  id: number
  name: string
  points: number
  codes: 'generated' | 'pool'
  codePrefix: string | null
  minTier: string | null
  active: boolean
  /** The id of the last code handed out, as loaded: the write requires it unchanged. */
  loadedCursor: number
  codeCursor: number
  codesIssued: number
  /**
   * Codes of the pool passed over since it was loaded because a claim holds them already (a
   * generated code, or one uploaded before uploads left out the codes handed out): never handed
   * out, so the write takes them off the pool's codes added, and its codes left stay true.
   */
  codesPassed: number
}

/** A code of a pool: its id is its place in upload order. */
export interface PoolCode {
  id: number
  code: string
  /** A claim of the shop holds this code already: it is passed over, never handed out twice. */
  held?: boolean
}

/** A stored claim: the redemption of the same id bought the reward, and the code. */
export interface StoredClaim {
  shopId: number
  id: string
  customerId: number
  rewardId: number
  rewardName: string
  code: string
  points: number
  createdUs: number
  availableAfter: number
  idemKey: string | null
  requestHash: string
  cancelledUs: number | null
  cancelAvailableAfter: number | null
}

/** A stored manual adjustment (the console). */
export interface StoredAdjustment {
  shopId: number
  id: string
  customerId: number
  points: number
  reason: string
  operator: string
  createdUs: number
  availableAfter: number
  idemKey: string | null
  requestHash: string
}

/** A stored redemption and the entries it spent, one per lot. */
export interface StoredRedemption {
  shopId: number
  id: string
  customerId: number
  points: number
  reference: string
  createdUs: number
  availableAfter: number
  idemKey: string | null
  requestHash: string
  cancelledUs: number | null
  cancelAvailableAfter: number | null
  entries: LotEntry[]
}

export function emptyState(): BatchState {
  return {
    customers: new Map(),
    orders: new Map(),
    ledger: new Map(),
    rules: new Map(),
    programs: new Map(),
    timeZones: new Map(),
    earnings: new Map(),
    earningsRanges: null,
    erasedEmailsKnown: null,
    warned: new Map(),
    idem: new Map(),
    guestOrders: new Map(),
    wallets: new Map(),
    redemptions: new Map(),
    redemptionIdem: new Map(),
    adjustmentIdem: new Map(),
    rewards: new Map(),
    poolCodes: new Map(),
    poolsLoadedToEnd: null,
    claims: new Map(),
    claimIdem: new Map(),
    imported: new Map(),
    referrals: new Map(),
    referralHashes: new Map(),
    referrersLoaded: null,
    heldEmails: new Map(),
    friendMembers: new Map(),
    friendOrders: new Map(),
    friendsLoaded: null,
    noticeRewards: new Map(),
    rewardNotices: new Map(),
    activities: new Map(),
  }
}

export interface EventRow {
  id: string
  shopId: number
  topic: Topic
  resourceId: number | null
  customerId: number | null
  receivedUs: number
  body: Uint8Array
  headers: string
  outcome: Status
  duplicateOf: string | null
  errors: FieldError[] | null
  /** Set on the event that claims the sender's idempotency key. */
  idemKey: string | null
  /** The event a console replay ran again. */
  replayOf?: string
}

export interface LedgerRow extends Holder {
  shopId: number
  /** Null for the entries of a redemption, its cancel, expiry, or a bonus. */
  orderId: number | null
  redemptionId: string | null
  points: number
  reason: Reason
  basis: Basis
  /** The webhook that caused the entry; null for a rebuild or a command. */
  eventId: string | null
  /** A reversal that took the customer's available points below zero (they were spent). */
  debt: boolean
  /** The manual adjustment an adjusted_manually entry belongs to. */
  adjustmentId?: string
}

/**
 * Personal data to redact in rows already written: the bodies and headers of the customers'
 * events, and of the orders' events, and the guest e-mail on the orders' ledger entries.
 */
export interface Redaction {
  shopId: number
  customerIds: number[]
  orderIds: number[]
}

export interface Decision {
  events: EventRow[]
  customers: StoredCustomer[]
  orders: StoredOrder[]
  ledger: LedgerRow[]
  redactions: Redaction[]
  /** New redemptions, and cancels of stored ones. */
  redemptions: StoredRedemption[]
  cancels: StoredRedemption[]
  /** New manual adjustments. */
  adjustments?: StoredAdjustment[]
  /** New claims, cancels of stored ones, and the pools whose cursor moved. */
  claims?: StoredClaim[]
  claimCancels?: StoredClaim[]
  pools?: StoredReward[]
  /** The outcome of each command of the batch, in batch order. */
  commands: CommandOutcome[]
  /** The change feed's entries of what this decision writes (src/batch/feed.ts), written in the same transaction. */
  feed: FeedEntry[]
  /** Earnings to write (a row) or delete (null), by the order they belong to. */
  earnings?: { shopId: number; orderId: number; row: StoredEarning | null }[]
  /** Tier changes to announce, in the feed (derived in src/batch/feed.ts). */
  tiers?: { shopId: number; customerId: number; from: string | null; to: string | null; eventId: string | null }[]
  /** Tier warnings (tier.expiring): time alone moves the customer from `tier` down to `to` at `atUs`. */
  tierWarnings?: { shopId: number; customerId: number; tier: string; to: string | null; atUs: number }[]
  /** Expiry warnings appended: each customer's expiry date, once per lead time (`daysBefore`), nearer ones after farther ones. */
  warnings?: { shopId: number; customerId: number; points: number; expiresUs: number; daysBefore: number }[]
  /** Notices whose state changed (reward_notices), and the reward.available entries sent (src/batch/decide-notices.ts). */
  noticeRows?: ({ shopId: number; customerId: number; rewardId: number } & RewardNotice)[]
  rewardNotices?: { shopId: number; customerId: number; rewardId: number; points: number; available: number }[]
  /** Referrals written: each as it ends, with its status and reason before (null for a new claim), for the feed. */
  referrals?: { referral: StoredReferral; before: Pick<StoredReferral, 'status' | 'reason'> | null }[]
  /** New links between e-mails (hashes) and their holders, and new members of friends (src/loyalty/referral-friend.ts). */
  heldEmails?: { shopId: number; emailHash: string; holder: string }[]
  friendMembers?: { shopId: number; emailHash: string; member: string }[]
  /** Reports written (activities), each as it ends, with what it held before (null: new), for the feed. */
  activities?: { activity: StoredActivity; before: { points: number; voided: boolean } | null }[]
  /** Birthdays set (src/batch/decide-birthdays.ts), and the birthdays paid: one per customer and year (birthday.rewarded). */
  birthdays?: { shopId: number; customerId: number; birthday: StoredBirthday }[]
  birthdayRewards?: BirthdayReward[]
}

/** A birthday paid: the shop's local year it was paid in (the key of exactly once), the points and the instant. */
export interface BirthdayReward {
  shopId: number
  customerId: number
  year: number
  points: number
  paidUs: number
}
