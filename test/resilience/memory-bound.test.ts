import assert from 'node:assert/strict'
import http from 'node:http'
import { readFileSync, writeFileSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { basic, createTestDatabase, CUSTOMER_CREATED, DATABASES, type TestDatabase } from '../support/harness.ts'
import { createKey, killAllServers, startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.ts'

// A flood of large bodies from an authenticated sender cannot take the
// server's memory without bound. BODY_BYTES_IN_FLIGHT bounds the bytes held at once, raw and
// parsed, and a body full of invalid items costs no more than reading it (the validator
// describes the first 100 errors and counts the rest). Measured on a real server process: its
// peak resident set (VmHWM) during each flood, over its resident set before it.
//
// With the default BODY_BYTES_IN_FLIGHT (64 MiB) and 200 bodies at once, the floods below peaked
// at +10 to +232 MB on this design run alone, and once at +366 MB while another suite ran beside
// it (the collector lags more on a busy CPU). Before it (the raw bytes budgeted, the parsed fields
// not), the valid-tags flood reached +527 MB on PostgreSQL. The bound leaves room for the
// collector's lag, not for a leak.

const BUDGET = 64 * 1024 * 1024 // the default
const BOUND_MB = 450
const AT_ONCE = 200

const FLOODS: { name: string; body: (id: number) => string }[] = [
  { name: '500 KB bodies of 250,000 invalid tags', body: (id) => `{"id":${id},"tags":[${Array(250_000).fill('1').join(',')}]}` },
  { name: '800 KB bodies of 200,000 valid tags', body: (id) => `{"id":${id},"tags":[${Array(200_000).fill('"a"').join(',')}]}` },
  { name: '1 MiB bodies with a large unknown field', body: (id) => `{"id":${id},"note":"${'n'.repeat(1_048_000)}"}` },
]

function memoryMb(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)![1])
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 }
}

/** Starts the peak (VmHWM) afresh at the current resident set (Linux: clear_refs 5). */
function resetPeak(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5')
}

interface Answer {
  status: number
  retryAfter?: string
  type?: string
}

function post(port: number, agent: http.Agent, key: string, body: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        port,
        method: 'POST',
        path: CUSTOMER_CREATED,
        agent,
        headers: { authorization: basic(key), 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => (text += chunk))
        res.on('end', () => {
          const type = res.statusCode === 200 ? undefined : (JSON.parse(text) as { type?: string }).type
          resolve({ status: res.statusCode!, retryAfter: res.headers['retry-after'], type })
        })
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

for (const kind of DATABASES) {
  describe(`${kind}: memory under a flood of large bodies, BODY_BYTES_IN_FLIGHT=64 MiB`, () => {
    let database: TestDatabase
    let server: ServerProcess
    let key: string
    let agent: http.Agent
    let nextId = 1

    before(async () => {
      database = await createTestDatabase(kind)
      key = (await createKey(database.url)).key
      // A generous database timeout: under a loaded machine, commits of megabytes of bodies must not
      // turn the flood into 503s for want of time; memory is what this measures.
      server = await startServerProcess(database.url, key, { BODY_BYTES_IN_FLIGHT: String(BUDGET), DB_TIMEOUT_MS: '20000', LOG_LEVEL: 'error' })
      agent = new http.Agent({ keepAlive: true, maxSockets: AT_ONCE })
      // Warm up every path once, so the peak below is the flood's, not the first compile's.
      for (const flood of FLOODS) await post(server.port, agent, key, flood.body(nextId++))
    })
    after(async () => {
      agent?.destroy()
      if (server) await stopServerProcess(server)
      await killAllServers()
      await database?.drop()
    })

    for (const flood of FLOODS) {
      test(`${AT_ONCE} ${flood.name} at once: every answer is 200, 422 or 503 with Retry-After, and the peak stays within ${BOUND_MB} MB`, async (t) => {
        const pid = server.child.pid!
        resetPeak(pid)
        const before = memoryMb(pid).rss
        const bodies = Array.from({ length: AT_ONCE }, () => flood.body(nextId++))
        const answers = await Promise.all(bodies.map((body) => post(server.port, agent, key, body)))
        const growth = memoryMb(pid).peak - before

        const byStatus: Record<number, number> = {}
        for (const a of answers) byStatus[a.status] = (byStatus[a.status] ?? 0) + 1
        t.diagnostic(`peak growth ${growth.toFixed(0)} MB; statuses ${JSON.stringify(byStatus)}`)
        for (const a of answers) {
          assert.ok([200, 422, 503].includes(a.status), `statuses: ${JSON.stringify(byStatus)}`)
          if (a.status === 503) assert.ok(a.retryAfter, 'a 503 has Retry-After')
        }
        assert.ok(
          answers.some((a) => a.status !== 503),
          `some bodies were taken: ${JSON.stringify(byStatus)}`,
        )
        assert.ok(growth < BOUND_MB, `peak resident set grew by ${growth.toFixed(0)} MB (bound ${BOUND_MB}); statuses ${JSON.stringify(byStatus)}`)
      })
    }
  })
}
