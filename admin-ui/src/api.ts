// The admin API as the dashboard uses it (/v3/admin/*, authenticated by the session cookie).
// The shapes are those of the API's OpenAPI document (GET /openapi.json).

export interface Page<T> {
  items: T[]
  next_cursor: string | null
}

export interface Session {
  name: string
  expires_at: string
}

export interface ShopSummary {
  shop: string
  created_at: string
  customers: number
  orders: number
  last_24h: Record<string, number>
}

export interface FieldError {
  pointer: string
  detail: string
}

export interface EventSummary {
  event_id: string
  shop: string
  topic: string
  resource_id: number | null
  received_at: string
  outcome: string
  duplicate_of: string | null
  errors: FieldError[] | null
  replay_of?: string | null
}

export interface EventDetail extends EventSummary {
  headers: Record<string, string> | null
  body: string | null
  redacted?: boolean
}

export interface Stats {
  minutes: ({ minute: string } & Record<string, number | string>)[]
  outcomes: string[]
  queue: { depth: number; max: number }
}

export interface Balances {
  available: number
  pending: number
  lifetime_earned: number
  [more: string]: unknown
}

export interface LedgerEntry {
  points: number
  reason: string
  order_id?: number | null
  created_at: string
  available_at?: string
  basis?: { amount: number; currency: string; rate: number | string; rule_version: number } | null
  note?: string | null
  operator?: string | null
  debt?: boolean
  [more: string]: unknown
}

export interface OrderPoints {
  id: number
  ref?: string | null
  total?: string | null
  currency?: string | null
  points?: { held?: number; points?: number; why?: string; reason?: string; [more: string]: unknown } | null
  [more: string]: unknown
}

export interface CustomerView {
  customer: { id: number; email?: string | null; first_name?: string | null; last_name?: string | null; deleted?: boolean; deleted_at?: string | null; [more: string]: unknown }
  points: { balances?: Balances; entries?: LedgerEntry[]; [more: string]: unknown } & Partial<Balances>
  orders: OrderPoints[]
}

export interface KeyView {
  id: number
  hint: string
  created_at: string
  last_used_at: string | null
  revoked_at: string | null
}

export interface AuditEntry {
  at: string
  operator: string
  action: string
  [more: string]: unknown
}

export interface Problem {
  type: string
  title: string
  status: number
  detail: string
  errors?: FieldError[]
  [more: string]: unknown
}

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
  let parsed: unknown = null
  try {
    parsed = text === '' ? null : JSON.parse(text)
  } catch {
    parsed = null
  }
  if (!res.ok) {
    const problem = (parsed && typeof parsed === 'object' ? parsed : { type: 'about:blank', title: res.statusText, status: res.status, detail: text }) as Problem
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
