import http from 'node:http'
import type { AddressInfo } from 'node:net'

// A fake of Klaviyo's Create Event API (POST /api/events, revision 2024-10-15), written from
// Klaviyo's published OpenAPI document rather than from our code: it checks every request's
// method, path, headers and JSON:API body, refuses what Klaviyo would (400 with JSON:API errors,
// 401 for a key it does not know), answers as the test says (202, or a 429 or 5xx with
// Retry-After), and keeps each event once per profile, metric and unique_id, as Klaviyo does.

export const KLAVIYO_REVISION = '2024-10-15'

export interface KlaviyoRequest {
  at: number
  /** The path before /api/events: processes given KLAVIYO_API_URLs with different paths are told apart by it. */
  prefix: string
  headers: http.IncomingHttpHeaders
  body: string
  /** The parsed body when it is JSON. */
  json?: EventBody
  /** What the fake found wrong with it (empty for a good request). */
  problems: string[]
  /** The status it answered. */
  status?: number
}

export interface EventBody {
  data: {
    type: 'event'
    attributes: {
      properties: Record<string, unknown>
      time: string
      unique_id: string
      metric: { data: { type: 'metric'; attributes: { name: string } } }
      profile: { data: { type: 'profile'; attributes: { email: string; properties: Record<string, unknown> } } }
    }
  }
}

/** A status at once, or a status with a Retry-After (seconds) or after a delay, or no answer until closed. */
export type FakeAnswer = number | { status: number; retryAfter?: string; delayMs?: number } | 'hang'

export interface KlaviyoFake {
  /** KLAVIYO_API_URL for the service: http://127.0.0.1:PORT */
  url: string
  requests: KlaviyoRequest[]
  /** Good requests Klaviyo accepted, once per profile e-mail, metric and unique_id (its dedup). */
  events(): EventBody[]
  /** Every problem found in any request: a test asserts there is none. */
  problems(): string[]
  /** How the next good request is answered (202 unless said). */
  answer: (request: KlaviyoRequest, index: number) => FakeAnswer
  close(): Promise<void>
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const keysOf = (v: Record<string, unknown>) => Object.keys(v).sort().join(',')

/** What is wrong with a Create Event body, as Klaviyo's EventCreateQueryV2 has it (and what we promise to send). */
export function bodyProblems(json: unknown): string[] {
  const p: string[] = []
  if (!isObject(json) || !isObject(json.data)) return ['the body is not {data: {…}}']
  const { data } = json
  if (keysOf(data) !== 'attributes,type') p.push(`data has ${keysOf(data)}, not type and attributes`)
  if (data.type !== 'event') p.push(`data.type is ${String(data.type)}, not event`)
  const a = data.attributes
  if (!isObject(a)) return [...p, 'data.attributes is not an object']
  if (keysOf(a) !== 'metric,profile,properties,time,unique_id') p.push(`attributes has ${keysOf(a)}, not metric, profile, properties, time and unique_id`)
  if (!isObject(a.properties)) p.push('attributes.properties is not an object')
  else if (Object.keys(a.properties).length > 400) p.push('attributes.properties has more than 400 properties')
  if (typeof a.time !== 'string' || Number.isNaN(Date.parse(a.time)) || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(a.time)) {
    p.push(`attributes.time is not an RFC 3339 date-time: ${JSON.stringify(a.time)}`)
  } else if (Date.parse(a.time) < Date.parse('1990-01-01T00:00:00Z') || Date.parse(a.time) > Date.now() + 365 * 86_400_000) {
    p.push('attributes.time is before 1990 or more than a year ahead')
  }
  if (typeof a.unique_id !== 'string' || a.unique_id === '') p.push('attributes.unique_id is not a non-empty string')
  const metric = isObject(a.metric) ? a.metric.data : undefined
  if (!isObject(metric) || metric.type !== 'metric' || !isObject(metric.attributes)) p.push('attributes.metric is not {data: {type: metric, attributes}}')
  else {
    const name = metric.attributes.name
    if (typeof name !== 'string' || name === '' || name.length >= 128) p.push('the metric has no name of less than 128 characters')
  }
  const profile = isObject(a.profile) ? a.profile.data : undefined
  if (!isObject(profile) || profile.type !== 'profile' || !isObject(profile.attributes)) p.push('attributes.profile is not {data: {type: profile, attributes}}')
  else {
    const email = profile.attributes.email
    if (typeof email !== 'string' || !/^[^@\s]+@[^@\s]+$/.test(email)) p.push('the profile has no e-mail')
    if (keysOf(profile.attributes) !== 'email,properties') p.push(`the profile has ${keysOf(profile.attributes)}, not email and properties`)
    if (!isObject(profile.attributes.properties)) p.push("the profile's properties are not an object")
  }
  return p
}

export async function startKlaviyoFake(keys: readonly string[]): Promise<KlaviyoFake> {
  const hanging = new Set<http.ServerResponse>()
  const fake: KlaviyoFake = {
    url: '',
    requests: [],
    events() {
      const seen = new Set<string>()
      const kept: EventBody[] = []
      for (const r of fake.requests) {
        if (r.status !== 202 || !r.json) continue
        const a = r.json.data.attributes
        const id = JSON.stringify([a.profile.data.attributes.email, a.metric.data.attributes.name, a.unique_id])
        if (seen.has(id)) continue
        seen.add(id)
        kept.push(r.json)
      }
      return kept
    },
    problems: () => fake.requests.flatMap((r) => r.problems),
    answer: () => 202,
    async close() {
      for (const res of hanging) res.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
  const errors = (status: number, code: string, title: string, detail: string) =>
    JSON.stringify({ errors: [{ id: 'fake', status, code, title, detail, source: { pointer: '/data/' } }] })
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const path = req.url ?? ''
      const prefix = path.endsWith('/api/events') ? path.slice(0, -'/api/events'.length) : ''
      const got: KlaviyoRequest = { at: Date.now(), prefix, headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), problems: [] }
      const index = fake.requests.push(got) - 1
      const send = (status: number, body = '', headers: Record<string, string> = {}) => {
        got.status = status
        res.writeHead(status, { ...(body ? { 'content-type': 'application/vnd.api+json' } : {}), ...headers }).end(body)
      }
      const h = req.headers
      if (req.method !== 'POST' || !/^(\/[a-z0-9]+)?\/api\/events$/.test(path)) got.problems.push(`${req.method} ${path}, not POST /api/events`)
      if (h['content-type'] !== 'application/vnd.api+json') got.problems.push(`content-type is ${h['content-type']}`)
      if (h.accept !== 'application/vnd.api+json') got.problems.push(`accept is ${h.accept}`)
      if (h.revision !== KLAVIYO_REVISION) got.problems.push(`revision is ${h.revision}, not ${KLAVIYO_REVISION}`)
      if (h['content-length'] !== String(Buffer.byteLength(got.body))) got.problems.push('content-length does not match the body')
      const auth = /^Klaviyo-API-Key (\S+)$/.exec(h.authorization ?? '')
      if (!auth) got.problems.push(`authorization is not Klaviyo-API-Key <key>`)
      try {
        got.json = JSON.parse(got.body) as EventBody
        got.problems.push(...bodyProblems(got.json))
      } catch {
        got.problems.push('the body is not JSON')
      }
      if (got.problems.length > 0) return send(400, errors(400, 'invalid', 'Invalid input.', got.problems.join('; ')))
      if (!keys.includes(auth![1]!)) {
        got.problems.length = 0
        return send(401, errors(401, 'not_authenticated', 'Authentication credentials were not provided.', 'Missing or invalid private key.'))
      }
      const answer = fake.answer(got, index)
      if (answer === 'hang') {
        hanging.add(res)
        res.on('close', () => hanging.delete(res))
        return
      }
      const status = typeof answer === 'number' ? answer : answer.status
      const body =
        status === 202
          ? ''
          : status === 429
            ? errors(429, 'throttled', 'Request was throttled.', 'as the test asked')
            : errors(status, 'error', 'An error occurred.', 'as the test asked')
      const headers: Record<string, string> = typeof answer === 'object' && answer.retryAfter !== undefined ? { 'retry-after': answer.retryAfter } : {}
      const delay = typeof answer === 'object' ? (answer.delayMs ?? 0) : 0
      if (delay === 0) return send(status, body, headers)
      const timer = setTimeout(() => send(status, body, headers), delay)
      res.on('close', () => clearTimeout(timer))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return fake
}
