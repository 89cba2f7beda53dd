import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { ChangeEntry } from '../schemas/changes.ts'
import { FEED_TYPES, gaveUp, matchesTypes, normalisedUrl, patternProblem, retryDelayMs, urlProblem } from './subscriptions.ts'

test('type patterns: exact types, families and * pass; empty, unknown and malformed ones are refused', () => {
  for (const ok of ['*', 'points.*', 'customer.*', 'order.updated', 'customer.deleted']) assert.equal(patternProblem(ok), null, ok)
  assert.equal(patternProblem(''), 'is empty')
  for (const bad of ['points', 'loyalty.*', 'customer.created', 'points.**', '*.changed']) assert.notEqual(patternProblem(bad), null, bad)
})

test('a filter matches its types and families only', () => {
  assert.ok(matchesTypes(['points.*'], 'points.changed'))
  assert.ok(!matchesTypes(['points.*'], 'customer.deleted'))
  assert.ok(matchesTypes(['customer.deleted', 'order.*'], 'order.updated'))
  assert.ok(!matchesTypes(['customer.deleted'], 'customer.updated'))
  assert.ok(matchesTypes(['*'], 'customer.updated'))
})

test("the types a filter takes are the feed schema's, so a type added there is taken with its family", () => {
  assert.deepEqual(
    FEED_TYPES,
    ChangeEntry.anyOf.map((e) => e.properties.type.const),
  )
  for (const type of FEED_TYPES) {
    assert.equal(patternProblem(type), null, type)
    assert.equal(patternProblem(`${type.split('.')[0]}.*`), null, type)
  }
})

test('endpoint URLs: control characters, unpaired surrogates, port 0 and IPv4-compatible addresses are refused; URLs are stored normalised', () => {
  assert.equal(urlProblem('http://h.test/a\u0000'), 'holds the control character U+0000')
  assert.equal(urlProblem('http://h.test/a\nb'), 'holds the control character U+000A')
  assert.equal(urlProblem('http://h.test/\u007f'), 'holds the control character U+007F')
  assert.equal(urlProblem('http://h.test/\udc00'), 'holds an unpaired surrogate (U+DC00), which is no character')
  assert.equal(urlProblem('http://h.test/\ud83d\ude00'), null, 'a pair is a character')
  assert.equal(urlProblem('http://h.test:0/'), 'names port 0, to which nothing connects')
  assert.match(urlProblem('http://[::127.0.0.1]/')!, /IPv4-compatible/)
  assert.match(urlProblem('http://[::10.0.0.1]/')!, /IPv4-compatible/)
  assert.equal(urlProblem('http://[::1]/'), null, "loopback is the guard's to refuse")
  assert.equal(urlProblem('http://[2606:4700::1]/'), null)
  assert.equal(normalisedUrl(' HTTP://Crm.Example.com:80/a/../b?x=1'), 'http://crm.example.com/b?x=1')
  assert.equal(normalisedUrl('http:/crm.example.com'), 'http://crm.example.com/')
  assert.equal(normalisedUrl('https://crm.example.com:443/in'), 'https://crm.example.com/in')
})

test('endpoint URLs: http(s) with a host only', () => {
  assert.equal(urlProblem('https://hooks.example.com/in?x=1'), null)
  assert.equal(urlProblem('http://127.0.0.1:9000/'), null)
  assert.match(urlProblem('ftp://example.com/')!, /http:\/\/ or https:\/\//)
  assert.match(urlProblem('example.com/hook')!, /absolute URL/)
  assert.match(urlProblem('https://u:p@example.com/')!, /user name/)
  assert.match(urlProblem('https://example.com/#x')!, /fragment/)
})

test('retry waits grow, stay within the cap and at least a second, whatever the jitter', () => {
  const policy = { baseMs: 1000, capMs: 3_600_000, giveUpMs: 86_400_000 }
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 200 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (failures, random) => {
      const wait = retryDelayMs(policy, failures, random)
      assert.ok(wait >= 1000 && wait <= policy.capMs, String(wait))
      assert.ok(retryDelayMs(policy, failures + 1, 0) >= retryDelayMs(policy, failures, 0))
    }),
  )
  assert.ok(gaveUp(policy, 0, 86_400_000))
  assert.ok(!gaveUp(policy, 0, 86_399_999))
})

test('retry waits double from the base up to the cap, and their second half is random: at random 0 half the doubled wait, near 1 nearly all of it', () => {
  const policy = { baseMs: 1000, capMs: 64_000, giveUpMs: 86_400_000 }
  // The ceiling of each wait: 1, 2, 4, … s, then the cap.
  const ceilings = [1000, 2000, 4000, 8000, 16_000, 32_000, 64_000, 64_000, 64_000]
  ceilings.forEach((ceiling, i) => {
    const failures = i + 1
    assert.equal(
      retryDelayMs(policy, failures, 0.999_999),
      Math.max(1000, Math.floor(ceiling * (0.5 + 0.999_999 / 2))),
      `failure ${failures}: the whole ceiling`,
    )
    // At least a second: the first wait's half is raised to it.
    assert.equal(retryDelayMs(policy, failures, 0), Math.max(1000, ceiling / 2), `failure ${failures}: half the ceiling`)
    assert.equal(retryDelayMs(policy, failures, 0.5), Math.max(1000, Math.floor(ceiling * 0.75)), `failure ${failures}: three quarters`)
  })
  // The random half spreads the waits: two endpoints failing together are not tried together again.
  const spread = new Set(Array.from({ length: 20 }, (_, i) => retryDelayMs(policy, 5, i / 20)))
  assert.equal(spread.size, 20)
})
