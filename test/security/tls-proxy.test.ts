import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { ConfigError, loadConfig } from '../../src/config.ts'
import { generateAdminKey } from '../../src/keys/admin-key.ts'
import { hashKey, keyHint } from '../../src/keys/api-key.ts'
import { insertAdmin } from '../../src/repos/admin-repo.ts'
import { migrate, openBackend } from '../../src/db/database.ts'
import { runCli } from '../support/cli-process.ts'
import { basic, createTestDatabase, CUSTOMER_CREATED, forEachDatabase, onDatabase, type TestDatabase } from '../support/harness.ts'
import { checkAnswer, createKey, request, startServerProcess, stopServerProcess, type ServerProcess } from '../support/server-process.ts'
import { requestThrough, startTlsProxy, type TlsProxy } from '../support/tls-proxy.ts'

// The console behind a TLS-terminating proxy (docs/operate/tls-proxy.md): a real
// node:https proxy with a certificate made at test time, in front of a real server process. The
// browser's side is in test/browser/console.test.ts.

const SHOP = 'tls'

/** A new operator's admin key in the database at `url`. */
async function adminKeyIn(url: string, name: string): Promise<string> {
  const backend = openBackend(url)
  try {
    await migrate(backend)
    const key = generateAdminKey()
    await insertAdmin(backend.db, name, hashKey(key), keyHint(key), Date.now() * 1000)
    return key
  } finally {
    await backend.close()
  }
}

/** The attributes of a Set-Cookie header, lower-cased names, in a set. */
function cookieAttributes(header: string | string[] | undefined): { pair: string; attributes: Set<string> } {
  const [pair, ...attributes] = String(header)
    .split(';')
    .map((s) => s.trim())
  return { pair: pair!, attributes: new Set(attributes.map((a) => a.toLowerCase())) }
}

forEachDatabase((kind) => {
  /** A server behind the proxy with `settings(proxy)` as its environment, a shop key, an operator and a customer. */
  function behindProxy(settings: (proxy: TlsProxy) => Record<string, string>) {
    const ctx = {} as { database: TestDatabase; proxy: TlsProxy; server: ServerProcess; shopKey: string; adminKey: string; eventId: string }
    before(async () => {
      ctx.database = await createTestDatabase(kind)
      ctx.shopKey = (await createKey(ctx.database.url, SHOP)).key
      ctx.adminKey = await adminKeyIn(ctx.database.url, 'Tess Proxy')
      ctx.proxy = await startTlsProxy()
      ctx.server = await startServerProcess(ctx.database.url, ctx.shopKey, settings(ctx.proxy))
      ctx.proxy.target = ctx.server.port
      const hook = await request(ctx.server.port, {
        method: 'POST',
        path: CUSTOMER_CREATED,
        agent: false,
        body: JSON.stringify({ id: 1, email: 'tls@example.com' }),
        headers: { authorization: basic(ctx.shopKey), 'content-type': 'application/json' },
      })
      assert.equal(hook.status, 200, hook.body)
      ctx.eventId = JSON.parse(hook.body!).event_id
    })
    after(async () => {
      await ctx.proxy?.close()
      if (ctx.server) await stopServerProcess(ctx.server)
      await ctx.database?.drop()
    })
    /** A request through the proxy, held to the OpenAPI document. */
    const through = async (method: string, path: string, headers: Record<string, string> = {}, body?: unknown) => {
      const answer = await requestThrough(ctx.proxy, {
        method,
        path,
        headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
      checkAnswer({ method, url: path, ...answer })
      return answer
    }
    const signIn = async () => {
      const res = await through('POST', '/v3/admin/session', {}, { key: ctx.adminKey })
      assert.equal(res.status, 200, res.body)
      return res
    }
    return { ctx, through, signIn }
  }

  /** Every change the console makes, with the session cookie and `origin`: their statuses. */
  async function changes(through: ReturnType<typeof behindProxy>['through'], cookie: string, origin: string, eventId: string) {
    const headers = { cookie, origin }
    const created = await through('POST', `/v3/admin/shops/${SHOP}/keys`, headers)
    const keyId = created.status === 201 ? JSON.parse(created.body).id : 1
    const revoked = await through('POST', `/v3/admin/shops/${SHOP}/keys/${keyId}/revoke`, headers)
    const adjusted = await through('POST', `/v3/admin/shops/${SHOP}/customers/1/adjustments`, headers, { points: 5, reason: 'behind the proxy' })
    const replayed = await through('POST', `/v3/admin/events/${eventId}/replay`, headers)
    return { created, revoked, adjusted, replayed }
  }

  for (const [setting, env] of [
    ['PUBLIC_ORIGIN', (proxy: TlsProxy) => ({ PUBLIC_ORIGIN: proxy.origin })],
    ['TRUST_PROXY', () => ({ TRUST_PROXY: '127.0.0.1' })],
  ] as const) {
    describe(`behind a TLS proxy, with ${setting}`, { timeout: 120_000 }, () => {
      const { ctx, through, signIn } = behindProxy(env)

      test('sign-in sets a Secure cookie; adjust, replay, key create and revoke work with the https Origin; sign-out clears it', async () => {
        const res = await signIn()
        const cookie = cookieAttributes(res.headers['set-cookie'])
        assert.match(cookie.pair, /^si_admin=[A-Za-z0-9_-]{43}$/)
        for (const a of ['secure', 'httponly', 'samesite=strict', 'path=/']) assert.ok(cookie.attributes.has(a), `${a} in ${res.headers['set-cookie']}`)
        const done = await changes(through, cookie.pair, ctx.proxy.origin, ctx.eventId)
        assert.deepEqual(
          Object.fromEntries(Object.entries(done).map(([k, v]) => [k, v.status])),
          { created: 201, revoked: 200, adjusted: 201, replayed: 200 },
          JSON.stringify(Object.values(done).map((d) => d.body)),
        )
        const out = await through('DELETE', '/v3/admin/session', { cookie: cookie.pair, origin: ctx.proxy.origin })
        assert.equal(out.status, 204, out.body)
        const cleared = cookieAttributes(out.headers['set-cookie'])
        assert.equal(cleared.pair, 'si_admin=')
        assert.ok(cleared.attributes.has('secure') && cleared.attributes.has('max-age=0'), String(out.headers['set-cookie']))
        assert.equal((await through('GET', '/v3/admin/session', { cookie: cookie.pair })).status, 401, 'the session ended')
      })

      test('a change with another Origin is still refused (403 cross-origin): plain http, another host', async () => {
        const cookie = cookieAttributes((await signIn()).headers['set-cookie']).pair
        for (const origin of [`http://127.0.0.1:${ctx.proxy.port}`, 'https://evil.example']) {
          const res = await through('POST', `/v3/admin/shops/${SHOP}/keys`, { cookie, origin })
          assert.equal(res.status, 403, res.body)
          assert.equal(JSON.parse(res.body).type, '/problems/cross-origin')
        }
      })
    })
  }

  describe('behind a TLS proxy, with neither setting', { timeout: 120_000 }, () => {
    const { ctx, through, signIn } = behindProxy(() => ({}))

    test('every change with the cookie is refused, and the 403 says which settings to make', async () => {
      const res = await signIn()
      const cookie = cookieAttributes(res.headers['set-cookie'])
      assert.ok(!cookie.attributes.has('secure'), 'the service cannot know the page is https')
      const done = await changes(through, cookie.pair, ctx.proxy.origin, ctx.eventId)
      for (const [what, answer] of Object.entries(done)) {
        assert.equal(answer.status, 403, `${what}: ${answer.body}`)
        const problem = JSON.parse(answer.body)
        assert.equal(problem.type, '/problems/cross-origin')
        assert.match(problem.detail, /PUBLIC_ORIGIN.*TRUST_PROXY/)
      }
    })

    test("without TRUST_PROXY, a client's own X-Forwarded-Proto is ignored", async () => {
      const cookie = cookieAttributes((await signIn()).headers['set-cookie']).pair
      const host = `127.0.0.1:${ctx.server.port}`
      const spoofed = await request(ctx.server.port, {
        method: 'POST',
        path: `/v3/admin/shops/${SHOP}/keys`,
        agent: false,
        headers: { cookie, host, origin: `https://${host}`, 'x-forwarded-proto': 'https' },
      })
      assert.equal(spoofed.status, 403, spoofed.body)
      const plain = await request(ctx.server.port, {
        method: 'POST',
        path: `/v3/admin/shops/${SHOP}/keys`,
        agent: false,
        headers: { cookie, host, origin: `http://${host}` },
      })
      assert.equal(plain.status, 201, "reached directly, the service's own http origin is its origin")
    })
  })
})

describe('the proxy settings are checked at start', () => {
  test('PUBLIC_ORIGIN is empty or an origin: scheme http or https, host, optional port, nothing else', () => {
    for (const good of ['', 'https://console.example.com', 'https://console.example.com:8443', 'http://127.0.0.1:8080']) {
      assert.equal(loadConfig({ PUBLIC_ORIGIN: good }).PUBLIC_ORIGIN, good)
    }
    for (const bad of [
      'console.example.com',
      'https://console.example.com/',
      'https://console.example.com/admin',
      'ftp://console.example.com',
      'https://',
      'https://user@console.example.com',
      'https://Console.example.com',
    ]) {
      assert.throws(
        () => loadConfig({ PUBLIC_ORIGIN: bad }),
        (err) => err instanceof ConfigError && /^PUBLIC_ORIGIN /.test(err.message),
        bad,
      )
    }
  })

  test('TRUST_PROXY is off by default; true, false, or addresses and CIDR ranges', () => {
    assert.equal(loadConfig({}).TRUST_PROXY, '')
    for (const good of ['true', 'false', '127.0.0.1', '127.0.0.1,10.0.0.0/8', '::1, fd00::/8', 'loopback', 'loopback,uniquelocal']) {
      assert.equal(loadConfig({ TRUST_PROXY: good }).TRUST_PROXY, good)
    }
    for (const bad of ['yes', '1', '-1', '10.0.0.0/33', '300.1.1.1', 'loopback,', 'example.com']) {
      assert.throws(
        () => loadConfig({ TRUST_PROXY: bad }),
        (err) => err instanceof ConfigError && /^TRUST_PROXY /.test(err.message),
        bad,
      )
    }
  })

  test('serve with a bad PUBLIC_ORIGIN exits non-zero, naming it', onDatabase('sqlite'), async () => {
    const database = await createTestDatabase('sqlite')
    try {
      const run = await runCli(['serve'], { DATABASE_URL: database.url, PORT: '0', PUBLIC_ORIGIN: 'console.example.com' })
      assert.notEqual(run.code, 0)
      assert.match(run.stderr, /PUBLIC_ORIGIN/)
    } finally {
      await database.drop()
    }
  })
})
