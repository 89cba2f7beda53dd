import assert from 'node:assert/strict'
import { test } from 'node:test'
import { KLAVIYO_LIMITS, KlaviyoPacer } from './klaviyo-pacer.ts'

/** How many requests the pacer lets through for `account` from `fromMs` to `toMs`, asking every `stepMs`. */
function sent(pacer: KlaviyoPacer, account: string, fromMs: number, toMs: number, stepMs: number): number[] {
  const at: number[] = []
  for (let now = fromMs; now < toMs; now += stepMs) if (pacer.take(account, now) === 0) at.push(now)
  return at
}

test("Klaviyo's published limits of Create Event: 350 a second, 3,500 a minute, per account", () => {
  assert.deepEqual(KLAVIYO_LIMITS, [
    { ms: 1000, max: 350 },
    { ms: 60_000, max: 3500 },
  ])
})

test('at most 350 requests in a second, then the wait until the next second', () => {
  const pacer = new KlaviyoPacer()
  const start = 1_700_000_000_000
  for (let i = 0; i < 350; i++) assert.equal(pacer.take('a', start + 100), 0)
  assert.equal(pacer.take('a', start + 100), 900, 'the 351st waits for the next second')
  assert.equal(pacer.take('b', start + 100), 0, 'another account has its own windows')
  assert.equal(pacer.waitOf('a', start + 500), 500, 'looking counts nothing')
  assert.equal(pacer.waitOf('a', start + 500), 500)
  assert.equal(pacer.waitOf('c', start + 500), 0, 'an account never seen waits for nothing')
  assert.equal(pacer.take('a', start + 1000), 0)
  assert.equal(pacer.waitOf('a', start + 1000), 0, 'one of 350 taken in the new second')
})

test('at most 3,500 in a minute, however they are spread over its seconds; nothing is counted while waiting', () => {
  const pacer = new KlaviyoPacer()
  const start = 1_700_000_040_000 - (1_700_000_040_000 % 60_000)
  // Asked every ms for a minute: 350 go in each of the first ten seconds, then none until the next minute.
  const at = sent(pacer, 'a', start, start + 60_000, 1)
  assert.equal(at.length, 3500)
  assert.ok(at[at.length - 1]! < start + 10_000, 'the minute was spent in its first ten seconds')
  assert.equal(pacer.take('a', start + 30_000), 30_000, 'the wait is until the next minute')
  assert.equal(pacer.take('a', start + 60_000), 0)
})

test("a 429's Retry-After holds the account until then, and only it", () => {
  const pacer = new KlaviyoPacer()
  pacer.block('a', 5000)
  assert.equal(pacer.take('a', 2000), 3000)
  assert.equal(pacer.take('b', 2000), 0)
  pacer.block('a', 4000)
  assert.equal(pacer.take('a', 4500), 500, 'an earlier end does not shorten a wait')
  assert.equal(pacer.take('a', 5000), 0)
})

test('limits of its own: windows counted apart, the longest wait wins', () => {
  const pacer = new KlaviyoPacer([
    { ms: 10, max: 2 },
    { ms: 100, max: 3 },
  ])
  assert.deepEqual(sent(pacer, 'a', 0, 100, 1), [0, 1, 10])
  assert.equal(pacer.take('a', 50), 50)
})
