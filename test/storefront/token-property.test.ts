import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import fc from 'fast-check'
import { runs } from '../support/seed.ts'
import { issueSigningSecret } from '../../src/keys/storefront-keys.ts'
import { revokeKey } from '../../src/repos/keys-repo.ts'
import { forEachDatabase, startTestApp, type TestApp } from '../support/harness.ts'
import { mint, storefrontShop, type StorefrontShop } from './kit.ts'

// No token is accepted unless a live signing secret of the key's shop signed it, for that shop
// (aud), for a customer (sub), within its time: whatever the signer (a live or revoked secret of
// this shop or the other, a made-up one), the kid (right, absent, another secret's, unknown), the
// audience, the subject, the time (fresh, expired, too long-lived, from the future), a character
// of the token changed, and which shop's key it is shown with. An accepted token reads exactly its
// customer. The expected answer is worked out here from those choices alone.

/** `good` four times in five, else `bad`. */
const mostly = <T, U>(good: fc.Arbitrary<T>, bad: fc.Arbitrary<U>) => fc.oneof({ weight: 4, arbitrary: good }, { weight: 1, arbitrary: bad })

interface Secret {
  text: string
  kid: string
  shop: 0 | 1
  live: boolean
}

forEachDatabase((kind) => {
  let t: TestApp
  let shops: StorefrontShop[]
  let secrets: Secret[]
  const nowS = () => Math.floor(Date.now() / 1000)

  before(async () => {
    t = await startTestApp(kind, { STOREFRONT_IP_RATE: '0', STOREFRONT_CUSTOMER_RATE: '0' })
    shops = [await storefrontShop(t, 'prop-a'), await storefrontShop(t, 'prop-b')]
    const db = t.app.services.backend.db
    secrets = []
    for (const [i, s] of shops.entries()) {
      secrets.push({ text: s.secret, kid: s.kid, shop: i as 0 | 1, live: true })
      const second = await issueSigningSecret(db, t.app.services.secrets, s.name, Date.now() * 1000)
      secrets.push({ text: second.key, kid: String(second.keyId), shop: i as 0 | 1, live: true })
      const revoked = await issueSigningSecret(db, t.app.services.secrets, s.name, Date.now() * 1000)
      await revokeKey(db, revoked.keyId, Date.now() * 1000)
      secrets.push({ text: revoked.key, kid: String(revoked.keyId), shop: i as 0 | 1, live: false })
      for (const c of [1, 2]) await s.earn(c, i * 10 + c, `${c}.00`)
    }
    secrets.push({ text: `ss_${'Q'.repeat(43)}`, kid: '987654321', shop: 0, live: false })
    t.app.services.storefrontAuth.invalidate()
  })
  after(() => t.close())

  test('a token is accepted only when a live secret of the key’s shop signed it, for that shop and a customer, in time', async () => {
    const seen = { accepted: 0, refused: 0 }
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          // Each choice is mostly the good one, so that about a quarter of the tokens are good.
          signer: mostly(fc.constantFrom(0, 1), fc.constantFrom(2, 3, 4, 5, 6)),
          kid: mostly(fc.constantFrom('own', 'none'), fc.constantFrom('other', 'unknown')),
          aud: mostly(fc.constant('own'), fc.constantFrom('other', 'nobody')),
          sub: mostly(fc.constantFrom('1', '2'), fc.constantFrom('x', '0', '01', 1)),
          time: mostly(fc.constant('fresh'), fc.constantFrom('expired', 'too-long', 'future')),
          shownTo: fc.constantFrom(0, 1),
          alter: mostly(fc.constant(null), fc.tuple(fc.nat(), fc.constantFrom('A', 'b', '7', '_'))),
        }),
        async ({ signer: pick, kid, aud: audChoice, sub, time, shownTo, alter }) => {
          // Signers 0 to 2 are the shown shop's (live, live, revoked), 3 to 5 the other's, 6 made up.
          const signer = pick === 6 ? 6 : pick < 3 ? shownTo * 3 + pick : (1 - shownTo) * 3 + (pick - 3)
          const aud = audChoice === 'own' ? shownTo : audChoice === 'other' ? 1 - shownTo : 'nobody'
          const secret = secrets[signer]!
          const shop = shops[shownTo]!
          const now = nowS()
          const [iat, exp] =
            time === 'fresh' ? [now, now + 60] : time === 'expired' ? [now - 600, now - 300] : time === 'too-long' ? [now, now + 901] : [now + 600, now + 660]
          const kidText = kid === 'own' ? secret.kid : kid === 'none' ? null : kid === 'other' ? secrets[(signer + 1) % secrets.length]!.kid : '55555555'
          let token = await mint(secret.text, { sub, aud: typeof aud === 'number' ? shops[aud]!.name : aud, iat, exp }, kidText)
          let altered = false
          if (alter !== null) {
            // A character inside a segment (never a dot, never a segment's last, whose spare bits may not count).
            const inner = [...token].map((c, i) => i).filter((i) => token[i] !== '.' && token[i + 1] !== '.' && i + 1 < token.length && i > 0)
            const at = inner[alter[0] % inner.length]!
            if (token[at] !== alter[1]) {
              token = token.slice(0, at) + alter[1] + token.slice(at + 1)
              altered = true
            }
          }
          const expected =
            !altered &&
            secret.live &&
            secret.shop === shownTo &&
            (kid === 'own' || kid === 'none') &&
            aud === shownTo &&
            (sub === '1' || sub === '2') &&
            time === 'fresh'
          const res = await shop.call('GET', '/me', token)
          if (expected) {
            seen.accepted++
            assert.equal(res.statusCode, 200, res.body)
            assert.equal(res.json().customer_id, Number(sub))
          } else {
            seen.refused++
            assert.equal(res.statusCode, 401, `${JSON.stringify({ signer, kid, aud, sub, time, shownTo, altered })}: ${res.statusCode} ${res.body}`)
            assert.match(res.json().type, /^\/problems\/token-/)
          }
        },
      ),
      { numRuns: runs(150) },
    )
    assert.ok(seen.accepted > 0 && seen.refused > 0, JSON.stringify(seen))
  })
})
