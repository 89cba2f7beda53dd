import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { DEFAULT_RULE } from '../../src/loyalty/rule.ts'
import { adminClient, newOperator } from '../support/admin.ts'
import { forEachDatabase, startTestApp, type TestApp } from '../support/harness.ts'
import { assertProblem, mint, ORIGIN, storefrontShop, type StorefrontShop } from './kit.ts'

// One token and one referral code have exactly one spelling, and a token names a customer only
// by an id it can name exactly, over HTTP on both databases: base64url that decodes to the same
// bytes with its unused last bits flipped or with `=` appended is refused, as is a code's
// spelling with its unused bits set; a `sub` past 2^53 - 1 is token-invalid, not a neighbour.

const SECRETS_KEY = Buffer.alloc(32, 5).toString('base64')
const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567'

/** `text` with the unused low bits of its last character set to `bits`, in `alphabet`. */
function withLastBits(text: string, alphabet: string, bits: number): string {
  return text.slice(0, -1) + alphabet[alphabet.indexOf(text.at(-1)!) | bits]
}

forEachDatabase((kind) => {
  let t: TestApp
  let s: StorefrontShop
  const now = () => Math.floor(Date.now() / 1000)
  before(async () => {
    t = await startTestApp(kind, { SECRETS_KEY })
    s = await storefrontShop(t, `${kind}-spellings`)
    await s.earn(1, 1, '10.00')
    const admin = adminClient(t, (await newOperator(t, 'Sol Spellings')).key)
    const rule = { ...DEFAULT_RULE, referral_points: 100 }
    assert.equal((await admin.put(`/v3/admin/shops/${s.name}/rule`, rule)).statusCode, 200)
  })
  after(() => t.close())

  describe('a token', () => {
    test('its signature with the unused last bits flipped, or with = appended: token-invalid; the token as signed: 200', async () => {
      const token = await s.token(1)
      const [head, body, signature] = token.split('.') as [string, string, string]
      // HS256's 32 bytes are 43 characters: the last one carries 2 bits that decode to nothing.
      assert.equal(signature.length, 43)
      assert.equal((await s.call('GET', '/me', token)).statusCode, 200)
      for (const bits of [1, 2, 3]) {
        const respelt = `${head}.${body}.${withLastBits(signature, BASE64URL, bits)}`
        assert.notEqual(respelt, token)
        assertProblem(await s.call('GET', '/me', respelt), 401, 'token-invalid')
      }
      assertProblem(await s.call('GET', '/me', `${token}=`), 401, 'token-invalid')
      assertProblem(await s.call('GET', '/me', `${head}.${body}=.${signature}`), 401, 'token-invalid')
      // Base64 with + and / rather than base64url's - and _: the same bytes, another spelling.
      const plain = Buffer.from(signature, 'base64url').toString('base64').replace(/=+$/, '')
      if (plain !== signature) assertProblem(await s.call('GET', '/me', `${head}.${body}.${plain}`), 401, 'token-invalid')
    })

    test('a sub past 2^53 - 1 ("9007199254740993"): token-invalid, not customer …992', async () => {
      const claims = (sub: string) => ({ sub, aud: s.name, iat: now(), exp: now() + 60 })
      for (const sub of ['9007199254740993', '9007199254740992', '9999999999999999']) {
        const res = await s.call('GET', '/me', await mint(s.secret, claims(sub), s.kid))
        assertProblem(res, 401, 'token-invalid')
        assert.match(res.json().detail, /sub/)
      }
      // The largest exact id is a customer id like any other: not known here, so 404, not 401.
      assertProblem(await s.call('GET', '/me', await mint(s.secret, claims(String(Number.MAX_SAFE_INTEGER)), s.kid)), 404, 'not-found')
    })
  })

  describe('a referral code', () => {
    test('its spelling with the unused last bits set: 404, as a code made up; the code as given: 201', async () => {
      const code = (await s.call('GET', '/me/referral', await s.token(1))).json().code as string
      assert.match(code, /^[a-z2-7]{26}$/)
      const claim = (withCode: string, email: string) =>
        t.app.inject({
          method: 'POST',
          url: `/v3/storefront/referrals/${withCode}/claim`,
          headers: { 'shop-key': s.pk, origin: ORIGIN, 'content-type': 'application/json' },
          payload: JSON.stringify({ email }),
        })
      for (const bits of [1, 2, 3]) {
        const respelt = withLastBits(code, BASE32, bits)
        assert.notEqual(respelt, code)
        assertProblem(await claim(respelt, `friend${bits}@example.com`), 404, 'not-found')
      }
      assert.equal((await claim(code, 'friend@example.com')).statusCode, 201)
    })
  })
})
