import type { TSchema } from 'typebox'
import { NAMED_PROBLEMS } from './problems.ts'
import { RedemptionBody, RedemptionList, RedemptionView } from './redemptions.ts'
import { CustomerView, LedgerEntryView, OrderView, PointsView } from './resources.ts'
import { Accepted, CustomerBody, OrderBody } from './webhooks.ts'
import { Health, Readiness } from './health.ts'
import { ChangeList } from './changes.ts'
import * as Admin from './admin.ts'
import * as Subscriptions from './subscriptions.ts'
import * as Rewards from './rewards.ts'
import { ImportRunList, ImportRunView, ImportSummary } from './imports.ts'

/** The schemas the OpenAPI document names (components/schemas), so generated clients get named types. */
export const NAMED_SCHEMAS: Record<string, TSchema> = {
  CustomerBody,
  OrderBody,
  Accepted,
  CustomerView,
  OrderView,
  LedgerEntryView,
  PointsView,
  RedemptionBody,
  RedemptionView,
  RedemptionList,
  Health,
  Readiness,
  ChangeList,
  ...NAMED_PROBLEMS,
  // The admin API (docs/operate/admin-api.md).
  AdminEvent: Admin.AdminEvent,
  AdminEventDetail: Admin.AdminEventDetail,
  AdminEventList: Admin.AdminEventList,
  AdminShop: Admin.AdminShop,
  AdminShopList: Admin.AdminShopList,
  AdminStats: Admin.Stats,
  AdminCustomerListItem: Admin.AdminCustomerListItem,
  AdminCustomer: Admin.AdminCustomer,
  AdminCustomerList: Admin.AdminCustomerList,
  AdminLedgerEntry: Admin.AdminLedgerEntry,
  AdminGuest: Admin.AdminGuest,
  AdjustmentBody: Admin.AdjustmentBody,
  AdjustmentView: Admin.AdjustmentView,
  AdminKey: Admin.AdminKey,
  AdminKeyList: Admin.AdminKeyList,
  AdminNewKey: Admin.NewKey,
  AuditEntry: Admin.AuditEntryView,
  AuditList: Admin.AuditList,
  ReplayAnswer: Admin.ReplayAnswer,
  SessionBody: Admin.SessionBody,
  SessionView: Admin.SessionView,
  // Outgoing webhooks (docs/integrate/outgoing-webhooks.md).
  SubscriptionBody: Subscriptions.SubscriptionBody,
  NewSubscription: Subscriptions.NewSubscription,
  Subscription: Subscriptions.SubscriptionView,
  SubscriptionList: Subscriptions.SubscriptionList,
  SubscriptionDetail: Subscriptions.SubscriptionDetail,
  SubscriptionDelivery: Subscriptions.DeliveryView,
  SubscriptionReplayBody: Subscriptions.ReplayBody,
  RotatedSecret: Subscriptions.RotatedSecret,
  // Rewards (docs/program/rewards.md) and switching in.
  RewardBody: Rewards.RewardBody,
  RewardPatch: Rewards.RewardPatch,
  RewardView: Rewards.RewardView,
  RewardList: Rewards.RewardList,
  ShopRewardView: Rewards.ShopRewardView,
  ShopRewardList: Rewards.ShopRewardList,
  ClaimView: Rewards.ClaimView,
  ClaimList: Rewards.ClaimList,
  AdminClaimList: Rewards.AdminClaimList,
  CodesBody: Rewards.CodesBody,
  CodesAdded: Rewards.CodesAdded,
  ImportSummary,
  ImportRunView,
  ImportRunList,
}
