import type { Static } from 'typebox'
import type * as S from '../../src/schemas/admin.ts'
import type * as W from '../../src/schemas/subscriptions.ts'
import type * as R from '../../src/schemas/report.ts'
import type * as RU from '../../src/schemas/rule.ts'
import type * as RW from '../../src/schemas/rewards.ts'
import type * as IM from '../../src/schemas/imports.ts'
import type { PROBLEM_SCHEMAS, ProblemStatus } from '../../src/schemas/problems.ts'

// The admin API as the dashboard uses it (/v3/admin/*, authenticated by the session cookie).
// Its types are the API's own schemas (src/schemas/admin.ts), imported as types only: nothing of
// the service is bundled, and a change of a schema that breaks a page fails the type-check.

export type Session = Static<typeof S.SessionView>
export type ShopSummary = Static<typeof S.AdminShop>
export type EventSummary = Static<typeof S.AdminEvent>
export type EventDetail = Static<typeof S.AdminEventDetail>
export type FieldError = NonNullable<EventSummary['errors']>[number]
export type Outcome = Static<typeof S.Outcome>
export type Stats = Static<typeof S.Stats>
export type CustomerView = Static<typeof S.AdminCustomer>
export type CustomerSummary = Static<typeof S.AdminCustomerSummary>
export type LedgerEntry = Static<typeof S.AdminLedgerEntry>
export type OrderView = Static<typeof S.AdminOrder>
export type Guest = Static<typeof S.AdminGuest>
export type Adjustment = Static<typeof S.AdjustmentView>
export type Redemption = Static<typeof S.AdminRedemption>
export type KeyView = Static<typeof S.AdminKey>
export type NewKey = Static<typeof S.NewKey>
export type AuditEntry = Static<typeof S.AuditEntryView>
export type Replayed = Static<typeof S.ReplayAnswer>
export type SubscriptionView = Static<typeof W.SubscriptionView>
export type SubscriptionDetail = Static<typeof W.SubscriptionDetail>
export type NewSubscription = Static<typeof W.NewSubscription>

export interface Page<T> {
  items: T[]
  next_cursor: string | null
}

/** The problem bodies of the API, one per status (src/schemas/problems.ts). */
type Problems = Static<(typeof PROBLEM_SCHEMAS)[ProblemStatus]>
type KeyOfAny<U> = U extends unknown ? keyof U : never
type ValueOfAny<U, K extends PropertyKey> = U extends { [M in K]?: infer V } ? V : never
/**
 * A problem body: what every problem has, and what only some statuses add (the 422's `errors`,
 * the 400's `event_id`, …), optional. `status` is any number: a proxy in front may answer too.
 */
export type Problem = Omit<Problems, 'status'> & { status: number } & { [K in Exclude<KeyOfAny<Problems>, keyof Problems>]?: ValueOfAny<Problems, K> }

/** A non-2xx answer of the API: its problem body. */
export class ApiError extends Error {
  constructor(readonly problem: Problem) {
    super(problem.detail || problem.title)
  }
  get status(): number {
    return this.problem.status
  }
}

/** Called when the API answers 401: the session expired or was signed out elsewhere. */
let onUnauthorized: () => void = () => {}
export function setUnauthorizedHandler(handler: () => void): void {
  onUnauthorized = handler
}

export async function api<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const init: RequestInit = { method, credentials: 'same-origin', headers: { accept: 'application/json', ...headers } }
  if (body !== undefined) {
    init.body = JSON.stringify(body)
    ;(init.headers as Record<string, string>)['content-type'] = 'application/json'
  }
  const res = await fetch(path, init)
  const text = await res.text()
  let parsed: unknown
  try {
    parsed = text === '' ? null : JSON.parse(text)
  } catch {
    parsed = null
  }
  if (!res.ok) {
    const problem = (
      parsed && typeof parsed === 'object' ? parsed : { type: 'about:blank', title: res.statusText, status: res.status, detail: text }
    ) as Problem
    if (res.status === 401 && path !== '/v3/admin/session') onUnauthorized()
    throw new ApiError({ ...problem, status: res.status })
  }
  return parsed as T
}

/** A query string of the set values. */
export function query(params: Record<string, string | number | undefined | null>): string {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v))
  const s = q.toString()
  return s ? `?${s}` : ''
}

export const enc = encodeURIComponent

/** The webhooks of `outcome` in one minute of the stats (the schema lists the outcomes as keys). */
export function countOf(minute: Stats['minutes'][number], outcome: string): number {
  return Number((minute as Record<string, unknown>)[outcome] ?? 0)
}
export type PointsReport = Static<typeof R.PointsReportView>
export type RuleView = Static<typeof RU.RuleView>
export type Rule = Static<typeof RU.RuleBody>
export type RuleVersion = RuleView['history'][number]
export type RulePreviewBody = Static<typeof RU.RulePreviewBody>
export type RulePreview = Static<typeof RU.RulePreview>
export type RewardView = Static<typeof RW.RewardView>
export type RewardBody = Static<typeof RW.RewardBody>
export type CodesAdded = Static<typeof RW.CodesAdded>
export type Claim = Static<typeof RW.ClaimView>
export type ImportRuns = Static<typeof IM.ImportRunList>
