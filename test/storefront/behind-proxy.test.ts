import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { SignJWT } from 'jose'
import { openBackend } from '../../src/db/database.ts'
import { secretBox } from '../../src/keys/secret-box.ts'
import { issuePublishableKey, issueSigningSecret } from '../../src/keys/storefront-keys.ts'
import { basic, createTestDatabase, DATABASES, forEachDatabase, ORDER_CREATED, startTestApp, type TestDatabase } from '../support/harness.ts'
import { eventually } from '../support/eventually.ts'
import { checkAnswer, createKey, request, startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.ts'
import { requestThrough, startTlsProxy, type TlsProxy } from '../support/tls-proxy.ts'
import { ORIGIN } from './kit.ts'

// The storefront behind the documented TLS proxy (docs/operate/tls-proxy.md): with PUBLIC_ORIGIN
// set and TRUST_PROXY not, every shopper has the proxy's address. A real node:https proxy in front
// of a real server process shows it: a shopper whose token holds is held to their own limit, not
// the address's, so one shopper cannot make the whole shop wait; and the service says once, in
// its log, that it sees forwarded headers it does not believe. In process, which headers and
// peers bring that warning, and that it comes once.

const SECRETS_KEY = Buffer.alloc(32, 6).toString('base64')
const SHOP = 'proxied'

interface LogLine {
  level: number
  msg: string
}

const warnings = (text: string): LogLine[] =>
  text
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine)
    .filter((line) => line.level === 40)

forEachDatabase((kind) => {
  describe('behind the TLS proxy, with PUBLIC_ORIGIN and without TRUST_PROXY', { timeout: 120_000 }, () => {
    let database: TestDatabase
    let proxy: TlsProxy
    let server: ServerProcess
    let pk: string
    let secret: string
    let kid: string
    before(async () => {
      database = await createTestDatabase(kind)
      const { key } = await createKey(database.url, SHOP)
      const backend = openBackend(database.url)
      try {
        pk = (await issuePublishableKey(backend.db, SHOP, [ORIGIN], Date.now() * 1000)).key
        const signing = await issueSigningSecret(backend.db, secretBox(Buffer.from(SECRETS_KEY, 'base64')), SHOP, Date.now() * 1000)
        secret = signing.key
        kid = String(signing.keyId)
      } finally {
        await backend.close()
      }
      proxy = await startTlsProxy()
      server = await startServerProcess(database.url, key, {
        PUBLIC_ORIGIN: proxy.origin,
        SECRETS_KEY,
        STOREFRONT_IP_RATE: '3',
        STOREFRONT_CUSTOMER_RATE: '4',
      })
      proxy.target = server.port
      for (const customer of [1, 2, 3]) {
        const order = { id: customer, currency: 'EUR', subtotal: '10.00', is_paid: true, processed_at: '2024-01-10T10:00:00Z', customer: { id: customer } }
        const hook = await request(server.port, {
          method: 'POST',
          path: ORDER_CREATED,
          agent: false,
          body: JSON.stringify(order),
          headers: { authorization: basic(key), 'content-type': 'application/json' },
        })
        assert.equal(hook.status, 200, hook.body)
      }
    })
    after(async () => {
      await proxy?.close()
      if (server) await stopServerProcess(server)
      await database?.drop()
    })

    const token = (customer: number) => {
      const iat = Math.floor(Date.now() / 1000)
      return new SignJWT({ sub: String(customer), aud: SHOP, iat, exp: iat + 300 })
        .setProtectedHeader({ alg: 'HS256', kid })
        .sign(new TextEncoder().encode(secret))
    }
    const through = async (path: string, bearer?: string) => {
      const headers = { 'shop-key': pk, origin: ORIGIN, ...(bearer === undefined ? {} : { authorization: `Bearer ${bearer}` }) }
      const answer = await requestThrough(proxy, { method: 'GET', path: `/v3/storefront${path}`, headers })
      checkAnswer({ method: 'GET', url: `/v3/storefront${path}`, ...answer })
      return answer
    }

    test('signed-in shoppers, all at the proxy’s address, are each held to their own limit; the key alone to the address’s', async () => {
      const tokens = await Promise.all([1, 2, 3].map(token))
      // 12 requests from one address with a limit of 3 per address: each shopper's 4 go through.
      for (const [i, bearer] of tokens.entries()) {
        for (let n = 0; n < 4; n++) {
          const res = await through('/me', bearer)
          assert.equal(res.status, 200, `customer ${i + 1}, request ${n + 1}: ${res.body}`)
        }
      }
      const fifth = await through('/me', tokens[0])
      assert.equal(fifth.status, 429, fifth.body)
      assert.match(JSON.parse(fifth.body).detail, /this customer/)
      assert.ok(Number(fifth.headers['retry-after']) >= 1)
      // Without a token, the address's limit: every shopper behind the proxy shares it until TRUST_PROXY names the proxy.
      const anonymous = []
      for (let n = 0; n < 4; n++) anonymous.push(await through('/rewards'))
      assert.deepEqual(
        anonymous.map((a) => a.status),
        [200, 200, 200, 429],
      )
      assert.match(JSON.parse(anonymous[3]!.body).detail, /this address/)
    })

    test('the log says once that the proxy’s X-Forwarded-For is not believed, and names TRUST_PROXY', async (c) => {
      const forwarded = () => warnings(server.stdout()).filter((line) => /X-Forwarded-For/.test(line.msg))
      const said = await eventually(
        async () => (forwarded().length > 0 ? forwarded() : undefined),
        10_000,
        () => `a warning in ${server.stdout()}`,
        {
          signal: c.signal,
        },
      )
      assert.equal(said.length, 1, server.stdout())
      assert.match(said[0]!.msg, /TRUST_PROXY/)
      assert.match(said[0]!.msg, /tls-proxy\.md/)
    })
  })
})

// The warning reads no database: on the first of the databases the suites run on.
describe('which forwarded headers bring the warning', () => {
  const kind = DATABASES[0]!
  const logged = async (settings: Record<string, string>, requests: { headers?: Record<string, string>; remoteAddress?: string }[]) => {
    const lines: string[] = []
    const t = await startTestApp(kind, { LOG_LEVEL: 'warn', ...settings }, { logStream: { write: (line: string) => void lines.push(line) } })
    try {
      for (const r of requests) assert.equal((await t.app.inject({ method: 'GET', url: '/healthz', ...r })).statusCode, 200)
      return warnings(lines.join('\n')).filter((line) => /Forwarded/.test(line.msg))
    } finally {
      await t.close()
    }
  }
  const xff = { headers: { 'x-forwarded-for': '198.51.100.7' } }

  test('X-Forwarded-For without TRUST_PROXY: one line, however many requests carry it', async () => {
    const said = await logged({}, [{}, xff, xff, { headers: { 'x-forwarded-for': '198.51.100.8' } }])
    assert.equal(said.length, 1)
    assert.match(said[0]!.msg, /^requests from 127\.0\.0\.1 carry X-Forwarded-For.*TRUST_PROXY/)
    assert.doesNotMatch(said[0]!.msg, /198\.51\.100/, 'the client addresses are not logged')
  })

  test('from a peer TRUST_PROXY names: none; from one it does not name: one line', async () => {
    assert.deepEqual(await logged({ TRUST_PROXY: '127.0.0.1' }, [xff, xff]), [])
    const said = await logged({ TRUST_PROXY: '10.0.0.0/8' }, [
      { ...xff, remoteAddress: '10.1.2.3' },
      { ...xff, remoteAddress: '192.0.2.9' },
    ])
    assert.equal(said.length, 1)
    assert.match(said[0]!.msg, /^requests from 192\.0\.2\.9 /)
  })

  test('Forwarded (RFC 7239), which the service does not read: one line that says to send X-Forwarded-For; no forwarded header: none', async () => {
    const said = await logged({ TRUST_PROXY: '127.0.0.1' }, [{ headers: { forwarded: 'for=198.51.100.7;proto=https' } }])
    assert.equal(said.length, 1)
    assert.match(said[0]!.msg, /Forwarded \(RFC 7239\).*X-Forwarded-For.*TRUST_PROXY/)
    assert.deepEqual(await logged({}, [{}, { headers: { 'x-forwarded-proto': 'https' } }]), [])
  })
})
