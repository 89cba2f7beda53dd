import type { TSchema } from 'typebox'
import { NAMED_PROBLEMS } from './problems.ts'
import { RedemptionBody, RedemptionList, RedemptionView } from './redemptions.ts'
import { CustomerView, LedgerEntryView, OrderView, PointsView } from './resources.ts'
import { Accepted, CustomerBody, OrderBody } from './webhooks.ts'
import { Health, Readiness } from './health.ts'
import { ChangeList } from './changes.ts'

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
}
