import type { Static } from 'typebox'
import type { PROBLEM_SCHEMAS, ProblemStatus } from '../../src/schemas/problems.ts'
import type { paths } from './api-types.ts'

// The admin API as the dashboard uses it (/v3/admin/*, authenticated by the session cookie).
// Its types come from the service's OpenAPI document, generated into api-types.ts by
// `npm run openapi:types` (test/console/dashboard-api-types.test.ts fails when the file is out of date):
// a call is typed by its path, so a change of the API that breaks a page fails the type-check.

/** What a 2xx answer of `M path` carries. */
type Got<P extends keyof paths, M extends VerbOf<P> = 'GET' & VerbOf<P>> = Answer<Operation<P, M>>
type Item<L> = L extends { items: (infer I)[] } ? I : never

export type Session = Got<'/v3/admin/session'>
export type ShopSummary = Item<Got<'/v3/admin/shops'>>
export type EventSummary = Item<Got<'/v3/admin/events'>>
export type Outcome = EventSummary['outcome']
export type EventDetail = Got<'/v3/admin/events/{event_id}'>
export type FieldError = NonNullable<EventSummary['errors']>[number]
export type Stats = Got<'/v3/admin/stats'>
export type CustomerView = Got<'/v3/admin/shops/{shop}/customers/{id}'>
export type CustomerSummary = Item<Got<'/v3/admin/shops/{shop}/customers'>>
export type LedgerEntry = CustomerView['points']['entries'][number]
export type OrderView = CustomerView['orders'][number]
export type Guest = Got<'/v3/admin/shops/{shop}/guests'>
export type Redemption = Item<Got<'/v3/admin/shops/{shop}/customers/{id}/redemptions'>>
export type KeyView = Item<Got<'/v3/admin/shops/{shop}/keys'>>
export type NewKey = Got<'/v3/admin/shops/{shop}/keys', 'POST'>
export type AuditEntry = Item<Got<'/v3/admin/audit'>>
export type Replayed = Got<'/v3/admin/events/{event_id}/replay', 'POST'>
export type SubscriptionView = Item<Got<'/v3/admin/shops/{shop}/subscriptions'>>
export type SubscriptionDetail = Got<'/v3/admin/shops/{shop}/subscriptions/{id}'>
export type PointsReport = Got<'/v3/admin/shops/{shop}/points-report'>
export type Dashboard = Got<'/v3/admin/shops/{shop}/dashboard'>
export type RuleView = Got<'/v3/admin/shops/{shop}/rule'>
export type Rule = RuleView['rule']
export type RuleVersion = RuleView['history'][number]
export type RulePreviewBody = JsonBody<Operation<'/v3/admin/shops/{shop}/rule/preview', 'POST'>>
export type RulePreview = Got<'/v3/admin/shops/{shop}/rule/preview', 'POST'>
export type RewardView = Item<Got<'/v3/admin/shops/{shop}/rewards'>>
export type RewardBody = JsonBody<Operation<'/v3/admin/shops/{shop}/rewards', 'POST'>>
export type CodesAdded = Got<'/v3/admin/shops/{shop}/rewards/{id}/codes', 'POST'>
export type Claim = Item<Got<'/v3/admin/shops/{shop}/claims'>>
export type ImportRuns = Got<'/v3/admin/shops/{shop}/points/imports'>

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

type Verb = 'GET' | 'POST' | 'PUT' | 'DELETE'
/** The operation at `P` for `M`, as the OpenAPI document describes it (api-types.ts, generated). */
type Operation<P extends keyof paths, M extends Verb> = paths[P][Lowercase<M> & keyof paths[P]]
/** The verbs the document has at `P`. */
type VerbOf<P extends keyof paths> = Uppercase<keyof paths[P] & string> & Verb
type PathParams<O> = O extends { parameters: { path: infer X } } ? { [K in keyof X]: string | number } : never
type QueryParams<O> = O extends { parameters: { query?: infer X } } ? { [K in keyof X]?: string | number | null } : never
type JsonBody<O> = O extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never
type JsonOf<R> = R extends { content: { 'application/json': infer J } } ? J : null
/** What a 2xx answer of the operation carries (null for a 204). */
export type Answer<O> = O extends { responses: infer R } ? { [S in keyof R]: S extends 200 | 201 | 202 | 204 ? JsonOf<R[S]> : never }[keyof R] : never

/** A call's parts beyond its path: each only where the operation has it. */
export type Request<O> = ([PathParams<O>] extends [never] ? { params?: never } : { params: PathParams<O> }) & {
  query?: [QueryParams<O>] extends [never] ? never : QueryParams<O>
  body?: JsonBody<O>
  headers?: Record<string, string>
}
type Optional<O> = [PathParams<O>] extends [never] ? [request?: Request<O>] : [request: Request<O>]

/** `/v3/admin/shops/{shop}/rule` with `{ shop }` filled in, each value encoded. */
function fill(path: string, params: Record<string, string | number> = {}): string {
  return path.replace(/\{([^}]+)\}/g, (_m, name: string) => {
    const value = params[name]
    if (value === undefined) throw new Error(`no value for {${name}} in ${path}`)
    return encodeURIComponent(String(value))
  })
}

/**
 * Calls the admin API at `path` (a path of the OpenAPI document, its parameters in `params`), and
 * answers what its 2xx carries: the path, the method, the parameters, the body and the answer are
 * typed from the document, so no call names its answer's type by hand.
 */
export async function api<P extends keyof paths, M extends VerbOf<P>>(
  method: M,
  path: P,
  ...[request]: Optional<Operation<P, M>>
): Promise<Answer<Operation<P, M>>> {
  const {
    params,
    query: q,
    body,
    headers = {},
  } = (request ?? {}) as {
    params?: Record<string, string | number>
    query?: Record<string, string | number | undefined | null>
    body?: unknown
    headers?: Record<string, string>
  }
  const url = fill(path, params) + (q ? query(q) : '')
  const init: RequestInit = { method, credentials: 'same-origin', headers: { accept: 'application/json', ...headers } }
  if (body !== undefined) {
    init.body = JSON.stringify(body)
    ;(init.headers as Record<string, string>)['content-type'] = 'application/json'
  }
  const res = await fetch(url, init)
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
  return parsed as Answer<Operation<P, M>>
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
export type Referral = Item<Got<'/v3/admin/shops/{shop}/referrals'>>
