// The real server as a separate process, a load generator that records what
// every webhook got back, and a check of the database against that record.
// Used by the crash-safety and graceful-shutdown suites.

import { spawn, type ChildProcess } from 'node:child_process'
import http from 'node:http'
import { createServer } from 'node:net'
import { fileURLToPath } from 'node:url'
import { issueKey } from '../../src/keys/issue-key.ts'
import { migrate, openBackend } from '../../src/db/database.ts'
import { Contract } from './contract.ts'
import { childEnv } from './cli-process.ts'
import { basic, CUSTOMER_CREATED, ORDER_CREATED } from './harness.ts'

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))

// ---------------------------------------------------------------------------
// Keys

/** A new key of shop `shop` in the database at `url` (migrated first). */
export async function createKey(url: string, shop = 'shop'): Promise<{ key: string; shopId: number }> {
  const backend = openBackend(url)
  try {
    await migrate(backend)
    const issued = await issueKey(backend.db, shop, Date.now() * 1000)
    return { key: issued.key, shopId: issued.shopId }
  } finally {
    await backend.close()
  }
}

// ---------------------------------------------------------------------------
// The server process

export interface Exit {
  code: number | null
  signal: NodeJS.Signals | null
}

export interface ServerProcess {
  child: ChildProcess
  port: number
  /** Resolves when the process has exited. */
  exited: Promise<Exit>
  /** Whether the process has exited. */
  hasExited(): boolean
  stdout(): string
  stderr(): string
}

const running = new Set<ChildProcess>()

// A last resort: no server outlives the test process, even if `after` never runs.
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL')
})

// Every complete answer a server process gives is held to the OpenAPI document it serves (as the
// harness does in process); what breaks it fails killAllServers or stopServerProcess.
let contract: Contract | undefined
const violations: string[] = []

function failOnViolations(): void {
  if (violations.length === 0) return
  const found = violations.splice(0)
  throw new Error(`answers of the server process that break the OpenAPI document:\n${found.slice(0, 20).join('\n')}`)
}

/** Holds an answer the test got some other way (through a proxy) to the document, as `request` does. */
export function checkAnswer(answer: { method: string; url: string; status: number; headers: http.IncomingHttpHeaders; body: string }): void {
  if (!contract) throw new Error('no server process has started: there is no document to check against')
  violations.push(...contract.check(answer))
}

/** Sends SIGKILL to every server still running and waits for each to exit. */
export async function killAllServers(): Promise<void> {
  const waits = [...running].map(
    (child) =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve()
        child.once('exit', () => resolve())
        child.kill('SIGKILL')
      }),
  )
  await Promise.all(waits)
  failOnViolations()
}

async function portIsFree(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const server = createServer()
    server.once('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
  })
}

async function randomFreePort(): Promise<number> {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 20001)
    if (await portIsFree(port)) return port
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

function spawnServer(port: number, env: Record<string, string>): ServerProcess {
  const child = spawn(process.execPath, ['bin/shop-intake.js', 'serve'], {
    cwd: ROOT,
    env: childEnv({ HOST: '127.0.0.1', LOG_LEVEL: 'warn', RATE_LIMIT_RPS: '0', ...env, PORT: String(port) }),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  running.add(child)
  let out = ''
  let err = ''
  let done = false
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk))
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk))
  const exited = new Promise<Exit>((resolve) => {
    const end = (exit: Exit) => {
      done = true
      running.delete(child)
      resolve(exit)
    }
    child.once('exit', (code, signal) => end({ code, signal }))
    // The process could not be started at all.
    child.once('error', (error) => {
      err += `${error.message}\n`
      if (child.pid === undefined) end({ code: null, signal: null })
    })
  })
  return { child, port, exited, hasExited: () => done, stdout: () => out, stderr: () => err }
}

/**
 * Starts `shop-intake serve` on a random port in 20000–40000 and waits until it
 * answers: /healthz with 200 and an authenticated read with anything but 401, so
 * that the answer comes from this server on this database and not from another
 * process on the same port. Retries on another port if the port was taken.
 */
export async function startServerProcess(databaseUrl: string, key: string, env: Record<string, string> = {}): Promise<ServerProcess> {
  for (let attempt = 1; ; attempt++) {
    const server = spawnServer(await randomFreePort(), { ...env, DATABASE_URL: databaseUrl })
    const deadline = Date.now() + 60_000
    let ready = false
    while (!server.hasExited() && Date.now() < deadline) {
      const health = await request(server.port, { method: 'GET', path: '/healthz', agent: false, timeoutMs: 2000 })
      if (health.status === 200) {
        const read = await request(server.port, {
          method: 'GET',
          path: '/v3/customers/1',
          agent: false,
          timeoutMs: 2000,
          headers: { authorization: basic(key) },
        })
        if (read.status !== undefined && read.status !== 401 && !server.hasExited()) {
          ready = true
          break
        }
      }
      await sleep(50)
    }
    if (ready) {
      if (!contract) {
        const doc = await request(server.port, { method: 'GET', path: '/openapi.json', agent: false, timeoutMs: 30_000 })
        if (doc.status !== 200 || doc.body === undefined) throw new Error(`GET /openapi.json answered ${doc.status ?? doc.error}`)
        contract = new Contract(JSON.parse(doc.body))
      }
      return server
    }
    if (!server.hasExited()) {
      server.child.kill('SIGKILL')
      await server.exited
      throw new Error(`the server did not become ready within 60 s; stderr:\n${server.stderr()}`)
    }
    await server.exited
    if (/EADDRINUSE/.test(server.stderr()) && attempt < 10) continue
    throw new Error(`the server exited before it was ready; stderr:\n${server.stderr()}\nstdout:\n${server.stdout()}`)
  }
}

/**
 * Stops a server with SIGTERM (it finishes what it accepted and exits) and waits
 * for it; SIGKILLs it if it has not exited after `graceMs`.
 */
export async function stopServerProcess(server: ServerProcess, graceMs = 20_000): Promise<Exit> {
  if (server.hasExited()) {
    const exit = await server.exited
    failOnViolations()
    return exit
  }
  server.child.kill('SIGTERM')
  const guard = setTimeout(() => server.child.kill('SIGKILL'), graceMs)
  try {
    return await server.exited
  } finally {
    clearTimeout(guard)
    failOnViolations()
  }
}

// ---------------------------------------------------------------------------
// HTTP

export interface Answer {
  /** The HTTP status, if a status line arrived. */
  status?: number
  body?: string
  /** Why no complete answer arrived: a connection error code, or "timeout". */
  error?: string
}

export interface RequestOptions {
  method: string
  path: string
  /** An Agent, or false for a new connection. */
  agent: http.Agent | false
  headers?: Record<string, string>
  body?: string
  timeoutMs?: number
}

/** One request; never rejects. A status line that arrived is kept even if the body then broke off. */
export function request(port: number, options: RequestOptions): Promise<Answer> {
  return new Promise<Answer>((resolve) => {
    let settled = false
    const answer: Answer = {}
    const finish = (error?: string) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      if (error !== undefined) answer.error = error
      resolve(answer)
    }
    const headers: Record<string, string> = { ...options.headers }
    if (options.body !== undefined) headers['content-length'] = String(Buffer.byteLength(options.body))
    const req = http.request({ host: '127.0.0.1', port, method: options.method, path: options.path, agent: options.agent, headers }, (res) => {
      answer.status = res.statusCode
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => {
        answer.body = Buffer.concat(chunks).toString('utf8')
        if (contract && res.statusCode !== undefined) {
          violations.push(...contract.check({ method: options.method, url: options.path, status: res.statusCode, headers: res.headers, body: answer.body }))
        }
        finish()
      })
      res.on('error', (err: NodeJS.ErrnoException) => finish(err.code ?? err.message))
      res.on('aborted', () => finish('aborted'))
      res.on('close', () => finish(answer.body === undefined ? 'closed' : undefined))
    })
    const timer = setTimeout(() => {
      finish('timeout')
      req.destroy()
    }, options.timeoutMs ?? 30_000)
    req.on('error', (err: NodeJS.ErrnoException) => finish(err.code ?? err.message))
    req.end(options.body)
  })
}

export interface Held {
  /** Resolves true once the server has answered 100 Continue: it has read the headers and taken the request on. */
  accepted: Promise<boolean>
  /** Sends the body and waits for the answer. */
  finish(): Promise<Answer>
}

/**
 * A POST on a connection of its own that sends `Expect: 100-continue` and holds
 * its body back until `finish`, so that a test knows the server accepted the
 * request before it does something (such as signal the server).
 */
export function holdRequest(port: number, options: { path: string; headers: Record<string, string>; body: string }): Held {
  const answer: Answer = {}
  let settle!: () => void
  const answered = new Promise<void>((resolve) => (settle = resolve))
  let settled = false
  const finishWith = (error?: string) => {
    if (settled) return
    settled = true
    if (error !== undefined) answer.error = error
    settle()
    markAccepted(false)
  }
  let markAccepted!: (value: boolean) => void
  const accepted = new Promise<boolean>((resolve) => (markAccepted = resolve))
  const req = http.request(
    {
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: options.path,
      agent: false,
      headers: { ...options.headers, expect: '100-continue', 'content-length': String(Buffer.byteLength(options.body)) },
    },
    (res) => {
      answer.status = res.statusCode
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => {
        answer.body = Buffer.concat(chunks).toString('utf8')
        finishWith()
      })
      res.on('error', (err: NodeJS.ErrnoException) => finishWith(err.code ?? err.message))
      res.on('close', () => finishWith(answer.body === undefined ? 'closed' : undefined))
    },
  )
  req.on('continue', () => markAccepted(true))
  req.on('error', (err: NodeJS.ErrnoException) => finishWith(err.code ?? err.message))
  req.flushHeaders()
  return {
    accepted,
    async finish() {
      if (!settled) req.end(options.body)
      await answered
      return answer
    },
  }
}

// ---------------------------------------------------------------------------
// Webhooks and what each got back

export interface Sent {
  /** Unique per webhook: the Idempotency-Key, the customer's first name or the order's ref. */
  ref: string
  kind: 'customer' | 'order'
  /** The customer's or order's id: the event's resource_id. */
  id: number
  /** The customer embedded in an order, also unique. */
  customerId: number | null
  path: string
  body: string
  /** Sent after the signal to the server. */
  afterSignal: boolean
  /** An order's points by the default rule, once applied. */
  points?: number
  answer?: Answer
  eventId?: string
  outcome?: string
}

export const isAcked = (s: Sent) => s.answer?.status !== undefined && s.answer.status >= 200 && s.answer.status < 300
export const gotConnectionError = (s: Sent) => s.answer !== undefined && s.answer.status === undefined

/** Makes distinct webhooks: customer upserts, and every fourth an order, half of those with a new customer. */
export class WebhookFactory {
  private next = 1
  constructor(private readonly tag: string) {}

  make(): Sent {
    const n = this.next++
    const ref = `${this.tag}-${n}`
    const id = n * 2
    if (n % 4 === 0) {
      const customerId = n % 8 === 0 ? n * 2 + 1 : null
      const amount = `${n % 1000}.${String(n % 100).padStart(2, '0')}`
      const body = {
        id,
        currency: 'EUR',
        total: amount,
        // Paid orders with a subtotal earn points (1 a whole euro by the default rule): the
        // embedded customer holds them, or the order's e-mail as a guest.
        subtotal: amount,
        email: `${ref}@example.org`,
        ref,
        is_paid: true,
        ...(customerId === null ? {} : { customer: { id: customerId, first_name: ref, last_name: 'Order' } }),
      }
      return { ref, kind: 'order', id, customerId, path: ORDER_CREATED, body: JSON.stringify(body), afterSignal: false, points: n % 1000 }
    }
    const body = { id, first_name: ref, last_name: 'Customer', email: `${ref}@example.com`, tags: ['reliability'] }
    return { ref, kind: 'customer', id, customerId: null, path: CUSTOMER_CREATED, body: JSON.stringify(body), afterSignal: false }
  }
}

export const webhookHeaders = (key: string, sent: Sent) => ({
  authorization: basic(key),
  'content-type': 'application/json',
  'idempotency-key': sent.ref,
})

/** Posts one webhook and records its answer in `sent`. */
export async function post(port: number, agent: http.Agent | false, key: string, sent: Sent): Promise<Answer> {
  const answer = await request(port, { method: 'POST', path: sent.path, agent, headers: webhookHeaders(key, sent), body: sent.body })
  record(sent, answer)
  return answer
}

/** Records an answer in `sent`, with the event id and status of a 2xx. */
export function record(sent: Sent, answer: Answer): void {
  sent.answer = answer
  if (answer.body !== undefined && answer.status !== undefined && answer.status < 300) {
    try {
      const parsed = JSON.parse(answer.body) as { event_id?: unknown; status?: unknown }
      if (typeof parsed.event_id === 'string') sent.eventId = parsed.event_id
      if (typeof parsed.status === 'string') sent.outcome = parsed.status
    } catch {
      // Left without an event id: the check then finds the event by its resource.
    }
  }
}

// ---------------------------------------------------------------------------
// The database, compared with the record

export interface StoredEvent {
  id: string
  topic: string
  resource_id: number | null
  outcome: string
}

export interface Stored {
  /** Events by resource_id; a webhook's resource id is unique, so one each unless something stored it twice. */
  events: Map<number, StoredEvent[]>
  eventIds: Set<string>
  customers: Map<number, string | null>
  orders: Map<number, string | null>
  /** The sum of the ledger's points of each order. */
  orderPoints: Map<number, number>
}

/** Everything the shop has stored, read through a backend of its own. */
export async function readStored(url: string, shopId: number): Promise<Stored> {
  const backend = openBackend(url)
  try {
    const events = await backend.db.selectFrom('events').select(['id', 'topic', 'resource_id', 'outcome']).where('shop_id', '=', shopId).execute()
    const customers = await backend.db.selectFrom('customers').select(['id', 'first_name']).where('shop_id', '=', shopId).execute()
    const orders = await backend.db.selectFrom('orders').select(['id', 'ref']).where('shop_id', '=', shopId).execute()
    const ledger = await backend.db
      .selectFrom('ledger')
      .select((eb) => ['order_id', eb.fn.sum<number | string>('points').as('points')])
      .where('shop_id', '=', shopId)
      .groupBy('order_id')
      .execute()
    const byResource = new Map<number, StoredEvent[]>()
    for (const e of events) {
      if (e.resource_id === null) continue
      const id = Number(e.resource_id)
      byResource.set(id, [...(byResource.get(id) ?? []), { ...e, resource_id: id }])
    }
    return {
      events: byResource,
      eventIds: new Set(events.map((e) => e.id)),
      customers: new Map(customers.map((c) => [Number(c.id), c.first_name])),
      orders: new Map(orders.map((o) => [Number(o.id), o.ref])),
      orderPoints: new Map(ledger.map((l) => [Number(l.order_id), Number(l.points)])),
    }
  } finally {
    await backend.close()
  }
}

const TOPIC = { customer: 'customer/hook_created', order: 'order/hook_created' } as const

/**
 * What is wrong with an acknowledged webhook in the database, or null: its event
 * must exist (with the id the answer named), be applied, and its effect be there,
 * an order's points included (the ledger is written in the same transaction).
 */
export function problemWith(sent: Sent, stored: Stored): string | null {
  // A retry answered `duplicate` is stored as an event of its own, with that outcome: it applied nothing.
  const events = (stored.events.get(sent.id) ?? []).filter((e) => e.topic === TOPIC[sent.kind] && e.outcome !== 'duplicate')
  const what = `${sent.kind} ${sent.id} (${sent.ref}, answered ${sent.answer?.status}${sent.eventId ? ` event ${sent.eventId}` : ''})`
  if (events.length === 0) return `${what}: no event stored`
  if (events.length > 1) return `${what}: ${events.length} events stored`
  const event = events[0]!
  if (sent.eventId !== undefined && event.id !== sent.eventId) return `${what}: the stored event is ${event.id}`
  if (event.outcome !== 'applied') return `${what}: the stored event's outcome is ${event.outcome}`
  if (sent.kind === 'customer' && stored.customers.get(sent.id) !== sent.ref) return `${what}: customer row ${JSON.stringify(stored.customers.get(sent.id))}`
  if (sent.kind === 'order' && stored.orders.get(sent.id) !== sent.ref) return `${what}: order row ${JSON.stringify(stored.orders.get(sent.id))}`
  if (sent.points !== undefined && (stored.orderPoints.get(sent.id) ?? 0) !== sent.points) {
    return `${what}: holds ${stored.orderPoints.get(sent.id) ?? 0} points in the ledger, not ${sent.points}`
  }
  if (sent.customerId !== null && stored.customers.get(sent.customerId) !== sent.ref) {
    return `${what}: embedded customer ${sent.customerId} row ${JSON.stringify(stored.customers.get(sent.customerId))}`
  }
  return null
}

/** Whether the webhook left any trace in the database. */
export function isStored(sent: Sent, stored: Stored): boolean {
  return (stored.events.get(sent.id) ?? []).some((e) => e.topic === TOPIC[sent.kind])
}

/** A message listing the first few problems, for an assertion. */
export function summarize(problems: string[], of: string): string {
  return `${problems.length} ${of}:\n  ${problems.slice(0, 15).join('\n  ')}${problems.length > 15 ? '\n  …' : ''}`
}

/** Runs `count` workers to completion. */
export async function workers(count: number, work: (worker: number) => Promise<void>): Promise<void> {
  await Promise.all(Array.from({ length: count }, (_, i) => work(i)))
}

/** A random integer in [min, max]. */
export function randomInt(min: number, max: number): number {
  return min + Math.floor(Math.random() * (max - min + 1))
}
