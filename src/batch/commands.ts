import type { Static } from 'typebox'
import type { Webhook } from '../domain/webhook.ts'
import type { BirthdaySource } from '../loyalty/birthdays.ts'
import type { AdjustmentView as AdjustmentViewSchema } from '../schemas/admin.ts'
import type { RedemptionView as RedemptionViewSchema } from '../schemas/redemptions.ts'
import type { ClaimView as ClaimViewSchema } from '../schemas/rewards.ts'

// Points commands: the items of a batch besides webhooks. They go through the
// same writer, locks and decider as webhooks, so a redemption is decided from
// the balance the ledger holds under the customer's lock, and answered only
// after its commit. Plain data: they cross to the SQLite writer thread.

/** Spend points; `redemptionId` is the id the new redemption gets. */
export interface RedeemCommand {
  command: 'redeem'
  shopId: number
  customerId: number
  redemptionId: string
  points: number
  reference: string
  atUs: number
  /** The Idempotency-Key, hashed; null without one. */
  idemKey: string | null
  /** A hash of the customer and the body: the same key with another request is refused. */
  requestHash: string
}

/** Give a redemption's points back. */
export interface CancelCommand {
  command: 'cancel'
  shopId: number
  customerId: number
  redemptionId: string
  atUs: number
}

/** Settle a customer's balance at `atUs` (the sweeper's item): the expiry due by then, and, in a shop with rewards, the rewards it now reaches. */
export interface ExpireCommand {
  command: 'expire'
  shopId: number
  customerId: number
  atUs: number
}

/** Decide the customer's tier now (the tier sweep's item, when time alone may have changed it). */
export interface TierCommand {
  command: 'tier'
  shopId: number
  customerId: number
  atUs: number
}

/** Append the expiry warnings due by `atUs` for a customer (the warning sweep's item). */
export interface WarnCommand {
  command: 'warn'
  shopId: number
  customerId: number
  atUs: number
}

/** An operator's manual ledger entry (the console); `adjustmentId` is the id the adjustment gets. */
export interface AdjustCommand {
  command: 'adjust'
  shopId: number
  customerId: number
  adjustmentId: string
  /** Non-zero: added when positive, taken (oldest points first) when negative. */
  points: number
  reason: string
  operator: string
  atUs: number
  /** The Idempotency-Key, hashed; null without one. */
  idemKey: string | null
  requestHash: string
}

/**
 * Spend a reward's points on a code: a redemption whose id is `claimId`, with the points the
 * reward costs and the code as its reference, and a claim that hands out the code.
 */
export interface ClaimCommand {
  command: 'claim'
  shopId: number
  customerId: number
  rewardId: number
  claimId: string
  /** The random part of a generated code (src/keys/reward-codes.ts); the reward adds its prefix. A pool's code is its next one instead. */
  random: string
  atUs: number
  /** The Idempotency-Key, hashed; null without one. */
  idemKey: string | null
  /** A hash of the customer and the reward: the same key with another request is refused. */
  requestHash: string
}

/** Give a claim's points back and void its code. */
export interface CancelClaimCommand {
  command: 'cancel-claim'
  shopId: number
  customerId: number
  claimId: string
  atUs: number
}

/** One line of a points import: the customer (created when unknown) and the points their imported entries hold. */
export interface ImportCommand {
  command: 'import'
  shopId: number
  customerId: number
  email: string
  points: number
  /** The tier the other platform gave (validated against the shop's tiers): held for one tier window from the first import. */
  tier: string | null
  /** The line's expires_at: when its imported points expire, instead of by the rule; null for the rule. */
  expiresUs: number | null
  atUs: number
}

/**
 * A friend's claim of a referrer's code (`customerId`, the referrer). The e-mail crosses only to
 * find the friend's orders stored before the claim (orders keep their e-mail); what is kept is its hash.
 */
export interface ReferralClaimCommand {
  command: 'referral-claim'
  shopId: number
  customerId: number
  referralId: string
  /** The keyed hash of the normalised e-mail (src/loyalty/referrals.ts). */
  emailHash: string
  /** The e-mail as given, lower-cased, and normalised: the stored orders sent with either are the friend's. */
  emails: string[]
  /** The random part of the friend's reward code, when the terms give one. */
  random: string
  atUs: number
}

/** Set a customer's birthday (the shop's server, the customer on the storefront, or an operator); the day itself pays at once. */
export interface BirthdaySetCommand {
  command: 'birthday-set'
  shopId: number
  customerId: number
  month: number
  day: number
  source: BirthdaySource
  atUs: number
}

/** Pay the customer's birthday if it is due at `atUs` (the birthday sweep's item). */
export interface BirthdayCommand {
  command: 'birthday'
  shopId: number
  customerId: number
  atUs: number
}

/** A shop's report of an action a customer took (docs/program/activities.md). */
export interface ActivityCommand {
  command: 'activity'
  shopId: number
  customerId: number
  action: string
  /** The shop's own id of the action: one report per (action, reference). */
  reference: string
  occurredUs: number
  atUs: number
}

/** Void a report: its points taken back, its slot to the next in line. */
export interface VoidActivityCommand {
  command: 'void-activity'
  shopId: number
  customerId: number
  action: string
  reference: string
  atUs: number
}

export type PointsCommand =
  | BirthdaySetCommand
  | BirthdayCommand
  | ActivityCommand
  | VoidActivityCommand
  | ReferralClaimCommand
  | RedeemCommand
  | CancelCommand
  | ExpireCommand
  | AdjustCommand
  | TierCommand
  | WarnCommand
  | ClaimCommand
  | CancelClaimCommand
  | ImportCommand
export type BatchItem = Webhook | PointsCommand

export const isCommand = (item: BatchItem): item is PointsCommand => 'command' in item

/** The time a batch item was received: webhooks by their arrival clock, commands by theirs. */
export const itemTimeUs = (item: BatchItem) => (isCommand(item) ? item.atUs : item.receivedUs)

/** A redemption as the answers show it (src/schemas/redemptions.ts). */
export type RedemptionView = Static<typeof RedemptionViewSchema>

/** A claim as the answers show it (src/schemas/rewards.ts). */
export type ClaimView = Static<typeof ClaimViewSchema>

/** Why a claim was refused with nothing spent, besides too few points. */
export type ClaimRefusal = 'reward-inactive' | 'tier-too-low' | 'pool-empty'

/** An adjustment as the answers show it (src/schemas/admin.ts). */
export type AdjustmentView = Static<typeof AdjustmentViewSchema>

/** A referral as a claim's answer shows it. */
export interface ReferralClaimView {
  referral_id: string
  status: 'pending' | 'rewarded' | 'refused' | 'voided'
  reason: string
  /** The friend's reward code, when the terms give one and it may be honoured; else the points their first order would add. */
  reward_code: string | null
  pending_points: number | null
}

/** A report as the answers show it (src/schemas/activities.ts). */
export interface ActivityView {
  action: string
  reference: string
  occurred_at: string
  status: 'awarded' | 'over_limit' | 'not_eligible' | 'voided'
  /** The points the report holds now. */
  points: number
}

export type CommandOutcome =
  /** A birthday set (`changed`: it differs from the one stored), and the points its day paid at once (0: none). */
  | { status: 'birthday-set'; birthday: { month: number; day: number }; changed: boolean; paid: number }
  /** The customer changed their birthday less than 365 days ago: they may change it from `from` (the shop's date). */
  | { status: 'birthday-refused'; from: string }
  /** The sweep's birthday: the points paid now (0: not due, paid already, or no birthday points). */
  | { status: 'birthday-paid'; points: number }
  /** A report: `replayed`, the same (action, reference) was reported before with the same occurred_at; nothing was written. */
  | { status: 'activity-recorded'; activity: ActivityView; replayed: boolean }
  /** The same (action, reference) reported before with another occurred_at. */
  | { status: 'activity-conflict'; activity: ActivityView }
  /** An action the shop's rule does not name. */
  | { status: 'activity-unknown'; detail: string }
  /** A void: `replayed`, it was voided before. */
  | { status: 'activity-voided'; activity: ActivityView; replayed: boolean }
  /** `replayed`: the same e-mail claimed the same code before; this claim changed nothing. */
  | { status: 'referral-claimed'; referral: ReferralClaimView; replayed: boolean }
  /** No referral program, or an unknown or deleted referrer. */
  | { status: 'referral-refused'; reason: 'no-program' | 'unknown-referrer'; detail: string }
  | { status: 'redeemed'; redemption: RedemptionView; replayed: boolean }
  /** `replayed`: it had been cancelled before; this cancel changed nothing. */
  | { status: 'cancelled'; redemption: RedemptionView; replayed: boolean }
  | { status: 'insufficient-points'; available: number }
  /** An adjustment or a cancel would take the customer's points (available and pending) past `limit`. */
  | { status: 'points-limit'; held: number; limit: number }
  | { status: 'not-found'; detail: string }
  | { status: 'idempotency-conflict' }
  | { status: 'settled'; expired: number }
  | { status: 'adjusted'; adjustment: AdjustmentView; replayed: boolean }
  | { status: 'tiered'; tier: string | null }
  | { status: 'warned'; warnings: number }
  | { status: 'claimed'; claim: ClaimView; replayed: boolean }
  | { status: 'claim-refused'; reason: ClaimRefusal; detail: string }
  /** `replayed`: it had been cancelled before; this cancel changed nothing. */
  | { status: 'claim-cancelled'; claim: ClaimView; replayed: boolean }
  /** A line of an import: whether it made the customer, the points it added (negative: took), and whether it was skipped (a deleted customer). */
  | {
      status: 'imported'
      created: boolean
      points: number
      skipped: boolean
      /** The line set, changed or cleared the expiry of the customer's imported points. */
      expiryChanged: boolean
      /** Points the line's expires_at, already passed, expired at once. */
      expired: number
      /** The line set, changed or cleared the tier the customer's imports brought over. */
      tierChanged: boolean
    }
