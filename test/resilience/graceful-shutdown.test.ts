import assert from 'node:assert/strict'
import http from 'node:http'
import { after, before, describe, test } from 'node:test'
import { basic, createTestDatabase, DATABASES, type TestDatabase } from '../support/harness.ts'
import { openRaw } from '../support/raw-http.ts'
import {
  createKey,
  gotConnectionError,
  holdRequest,
  isAcked,
  isStored,
  killAllServers,
  post,
  problemWith,
  randomInt,
  readStored,
  record,
  request,
  startServerProcess,
  summarize,
  webhookHeaders,
  WebhookFactory,
  workers,
  type Sent,
} from '../support/server-process.ts'

// On SIGTERM the service stops accepting new connections,
// finishes and commits the in-flight batches, answers what it accepted and
// exits 0 within 10 s. Webhooks keep flowing over many keep-alive connections
// until the process is gone, and fresh connections are opened after the signal.
// - Requests the server has taken on before the signal (it answered their
//   `Expect: 100-continue`; their bodies follow the signal) must be answered 200
//   and stored, and new connections must be refused while they are pending.
// - Afterwards the database is compared with what every webhook got back:
//   every 2xx is stored and applied, and nothing is stored that did not get a
//   2xx (a webhook committed and then cut off was accepted and not answered).
// - Before the signal every answer is 200; after it, 200 or 503.

const CONCURRENCY = 48
/** Only a hang reaches this: a run takes seconds. */
const TEST_TIMEOUT_MS = 180_000
/** Ranges of acknowledged webhooks after which SIGTERM is sent, one test each. */
const SIGNAL_RANGES: [number, number][] = [
  [150, 600],
  [600, 1200],
]
const SHUTDOWN_BOUND_MS = 10_000
/** Requests taken on by the server before SIGTERM whose bodies are sent only after it. */
const HELD = 8
/** The server is SIGKILLed if it has not exited this long after SIGTERM, so that a hang fails instead of stalling. */
const GUARD_MS = 20_000
/** A stream that has not reached the signal point after this many webhooks has failed. */
const MAX_BEFORE_SIGNAL = 10_000

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** `promise`, or `fallback` if it has not settled within `ms`. */
function within<T>(promise: Promise<T>, ms: number, fallback: T): Promise<T> {
  return Promise.race([promise, new Promise<T>((resolve) => setTimeout(() => resolve(fallback), ms).unref())])
}

for (const kind of DATABASES) {
  describe(`graceful shutdown on ${kind}`, () => {
    let database: TestDatabase | undefined
    let key = ''
    let shopId = 0
    /** One factory for both runs: they share the database, so ids must not repeat. */
    const factory = new WebhookFactory(`term-${kind}`)

    before(async () => {
      database = await createTestDatabase(kind)
      ;({ key, shopId } = await createKey(database.url))
    })
    after(async () => {
      await killAllServers()
      await database?.drop()
    })

    SIGNAL_RANGES.forEach(([min, max]) => {
      const signalAt = randomInt(min, max)
      test(
        `SIGTERM after ${signalAt} acknowledged webhooks: exit 0 within 10 s, every 2xx stored, nothing accepted left unanswered`,
        { timeout: TEST_TIMEOUT_MS },
        async (t) => {
          const url = database!.url
          const server = await startServerProcess(url, key)
          const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY })
          const sent: Sent[] = []
          const pending = new Set<Sent>()
          const inFlightAtSignal: Sent[] = []
          const probes: Sent[] = []
          const held: Sent[] = []
          let heldAccepted: boolean[] = []
          let acked = 0
          let signalling = false
          let signalledAt: number | undefined
          let exitedAt: number | undefined
          let refusedWhileRunning = false
          let guard: NodeJS.Timeout | undefined
          let sawClosing!: () => void
          const closing = new Promise<void>((resolve) => (sawClosing = resolve))
          const exited = server.exited.then((exit) => {
            exitedAt = performance.now()
            sawClosing()
            return exit
          })

          /** Fresh connections, one after another, from the signal until the process is gone. */
          const probe = async () => {
            while (exitedAt === undefined) {
              const webhook = factory.make()
              webhook.afterSignal = true
              sent.push(webhook)
              probes.push(webhook)
              const answer = await post(server.port, false, key, webhook)
              if (answer.error === 'ECONNREFUSED' && exitedAt === undefined) {
                refusedWhileRunning = true
                sawClosing()
              }
              await sleep(5)
            }
          }

          /**
           * Opens HELD requests that the server takes on (100 Continue) but cannot finish,
           * since their bodies are held back; sends SIGTERM; once the server refuses new
           * connections, sends the bodies. A graceful server must answer and store them.
           */
          const signal = async () => {
            const requests = Array.from({ length: HELD }, () => {
              const webhook = factory.make()
              sent.push(webhook)
              held.push(webhook)
              return { webhook, request: holdRequest(server.port, { path: webhook.path, headers: webhookHeaders(key, webhook), body: webhook.body }) }
            })
            heldAccepted = await Promise.all(requests.map((r) => within(r.request.accepted, 10_000, false)))
            inFlightAtSignal.push(...pending)
            signalledAt = performance.now()
            server.child.kill('SIGTERM')
            guard = setTimeout(() => server.child.kill('SIGKILL'), GUARD_MS)
            const probing = probe()
            await closing
            await Promise.all(requests.map(async (r) => record(r.webhook, await r.request.finish())))
            await probing
          }

          let signalled: Promise<void> = Promise.resolve()
          try {
            await workers(CONCURRENCY, async () => {
              while (exitedAt === undefined) {
                if (!signalling && sent.length >= MAX_BEFORE_SIGNAL) break
                const webhook = factory.make()
                webhook.afterSignal = signalledAt !== undefined
                sent.push(webhook)
                pending.add(webhook)
                await post(server.port, agent, key, webhook)
                pending.delete(webhook)
                if (isAcked(webhook) && ++acked >= signalAt && !signalling) {
                  signalling = true
                  signalled = signal()
                }
                // Reconnecting to a closed port fails at once: do not spin.
                if (gotConnectionError(webhook)) await sleep(2)
              }
            })
            await signalled
          } finally {
            agent.destroy()
            clearTimeout(guard)
          }
          assert.ok(signalledAt !== undefined, `the stream never reached ${signalAt} acknowledged webhooks (${acked} of ${sent.length})`)
          assert.deepEqual(heldAccepted, Array(HELD).fill(true), 'the server took on every held request (100 Continue) before SIGTERM')
          const exit = await exited

          // Exit 0 within the bound.
          const tookMs = exitedAt! - signalledAt
          assert.deepEqual(
            exit,
            { code: 0, signal: null },
            `the server exited ${JSON.stringify(exit)} ${Math.round(tookMs)} ms after SIGTERM; stderr:\n${server.stderr()}`,
          )
          assert.ok(tookMs < SHUTDOWN_BOUND_MS, `the server took ${Math.round(tookMs)} ms to exit after SIGTERM`)

          // Answers: 200 while up; after the signal 200 or 503, never any other status.
          const answered = sent.filter((s) => s.answer?.status !== undefined)
          const statuses = new Map<number, number>()
          for (const s of answered) statuses.set(s.answer!.status!, (statuses.get(s.answer!.status!) ?? 0) + 1)
          const inFlight = new Set(inFlightAtSignal)
          const wrong = answered.filter((s) => {
            const status = s.answer!.status!
            if (status === 200) return s.answer!.error === undefined && s.outcome !== 'applied'
            return !(status === 503 && (s.afterSignal || inFlight.has(s)))
          })
          assert.deepEqual(
            wrong.map((s) => `${s.ref}${s.afterSignal ? ' (after SIGTERM)' : ''}: ${s.answer!.status} ${s.answer!.body}`),
            [],
            'before SIGTERM every answer is 200 applied; after it, 200 or 503',
          )

          const stored = await readStored(url, shopId)
          const lost = sent
            .filter(isAcked)
            .map((s) => problemWith(s, stored))
            .filter((p): p is string => p !== null)
          const unanswered = sent.filter((s) => !isAcked(s) && isStored(s, stored))
          const count = (list: Sent[], test: (s: Sent) => boolean) => list.filter(test).length
          const inFlightAcked = count(inFlightAtSignal, isAcked)
          t.diagnostic(
            `${kind}: SIGTERM at ${acked >= signalAt ? signalAt : acked} acknowledged, exit ${exit.code} after ${Math.round(tookMs)} ms; ` +
              `sent ${sent.length} (${count(sent, (s) => s.afterSignal)} after SIGTERM), statuses ${JSON.stringify(Object.fromEntries(statuses))}, ` +
              `connection errors ${count(sent, gotConnectionError)}; in flight at SIGTERM ${inFlightAtSignal.length}: ` +
              `${inFlightAcked} got 2xx, ${count(inFlightAtSignal, (s) => s.answer?.status !== undefined) - inFlightAcked} another status, ` +
              `${count(inFlightAtSignal, gotConnectionError)} a connection error; held ${HELD}: ${count(held, isAcked)} 2xx; ` +
              `new connections after SIGTERM ${probes.length}: ${count(probes, isAcked)} 2xx, ` +
              `${count(probes, (s) => s.answer?.status !== undefined && !isAcked(s))} other status, ${count(probes, gotConnectionError)} refused or reset`,
          )

          assert.deepEqual(
            held.map((s) => s.answer?.status ?? s.answer?.error),
            Array(HELD).fill(200),
            'requests the server had taken on before SIGTERM are finished and answered 200',
          )
          assert.ok(refusedWhileRunning, 'new connections were refused while the server was still finishing its requests')
          assert.equal(lost.length, 0, summarize(lost, 'webhooks answered 2xx but not stored and applied after SIGTERM'))
          assert.deepEqual(
            unanswered.map((s) => `${s.ref}${s.afterSignal ? ' (after SIGTERM)' : ''}: ${s.answer?.status ?? s.answer?.error}`),
            [],
            'every stored webhook was answered 2xx: nothing accepted and committed was left unanswered',
          )
        },
      )
    })

    test(
      'a request on a kept-alive connection after SIGTERM gets 503 with Retry-After and Connection: close, and is not stored',
      { timeout: TEST_TIMEOUT_MS },
      async () => {
        const url = database!.url
        const server = await startServerProcess(url, key, { RETRY_AFTER_SECONDS: '7' })
        const guard = setTimeout(() => server.child.kill('SIGKILL'), GUARD_MS + 60_000)
        try {
          const first = factory.make()
          const second = factory.make()
          const head = (s: Sent, extra = '') =>
            `POST ${s.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${basic(key)}\r\nContent-Type: application/json\r\n` +
            `Idempotency-Key: ${s.ref}\r\nContent-Length: ${Buffer.byteLength(s.body)}\r\n${extra}\r\n`
          // The first request is taken on (100 Continue) before the signal; its body is held back,
          // so the connection is busy, not idle, and the server cannot finish closing.
          const c = await openRaw(server.port)
          c.socket.write(head(first, 'Expect: 100-continue\r\n'))
          const interim = await c.responded(1)
          assert.equal(interim[0]?.status, 100, c.text())
          server.child.kill('SIGTERM')
          // The server is closing once it refuses new connections.
          for (;;) {
            const probe = await request(server.port, { method: 'GET', path: '/healthz', agent: false, timeoutMs: 5000 })
            if (probe.error === 'ECONNREFUSED') break
            await sleep(10)
          }
          // The held body, then a second request on the same kept-alive connection.
          c.socket.write(first.body + head(second) + second.body)
          const responses = (await c.responded(3)).filter((r) => r.status >= 200)
          await within(c.closed, 10_000, undefined)
          assert.deepEqual(
            responses.map((r) => r.status),
            [200, 503],
            c.text(),
          )
          const refused = responses[1]!
          assert.equal(refused.headers['retry-after'], '7', 'Retry-After is RETRY_AFTER_SECONDS')
          assert.equal(refused.headers['connection'], 'close')
          assert.match(refused.headers['content-type'] ?? '', /^application\/problem\+json/)
          assert.equal(JSON.parse(refused.body).type, '/problems/unavailable')
          assert.ok(c.isClosed(), 'the server closes the connection after the 503')
          const exit = await within(server.exited, SHUTDOWN_BOUND_MS + 5_000, { code: -1, signal: null })
          assert.deepEqual(exit, { code: 0, signal: null })
          const stored = await readStored(url, shopId)
          assert.ok(isStored(first, stored), 'the request taken on before SIGTERM is stored')
          assert.ok(!isStored(second, stored), 'the request answered 503 is not stored')
        } finally {
          clearTimeout(guard)
        }
      },
    )
  })
}
