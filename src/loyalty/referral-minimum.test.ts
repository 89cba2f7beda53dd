import assert from 'node:assert/strict'
import { test } from 'node:test'
import { minimumFaults, minimumFor, minimumOption, parseMinimum } from './referral-minimum.ts'

// The referral minimum as the rule writes it, what an order in each currency must reach, and what
// a rule given now may say (src/loyalty/referral-minimum.ts).

test('given an amount and its currency, then an order in it is held to the amount, one in another cannot qualify', () => {
  const min = parseMinimum('30.00 EUR')!
  assert.equal(minimumFor(min, 'EUR'), 3000)
  assert.equal(minimumFor(min, 'USD'), undefined)
  assert.equal(minimumFor(min, null), undefined)
})

test('given one amount per currency, then each currency its own; 0.00 alone, any currency and no minimum', () => {
  const min = parseMinimum('30.00 EUR, 35.50 USD')!
  assert.deepEqual([minimumFor(min, 'EUR'), minimumFor(min, 'USD'), minimumFor(min, 'GBP')], [3000, 3550, undefined])
  assert.equal(minimumFor(parseMinimum('0.00')!, 'JPY'), 0)
  assert.equal(minimumFor(parseMinimum('0.00')!, null), 0)
  // What rules written before currencies counted hold: the amount, in the order's own currency.
  assert.equal(minimumFor(parseMinimum('30.00')!, 'GBP'), 3000)
})

test('given a text that is no minimum, then none', () => {
  for (const text of ['30', '30.0 EUR', '30.00 eur', '30.00,EUR', '30.00 EUR,35.00 USD', '30.00, 35.00 USD', '30.00 EUR, 40.00 EUR', ''])
    assert.equal(parseMinimum(text), null, text)
})

test('given a rule now, then a positive amount must name its currency, and each currency comes once', () => {
  assert.deepEqual(minimumFaults('0.00'), [])
  assert.deepEqual(minimumFaults('30.00 EUR'), [])
  assert.match(minimumFaults('30.00')[0]!, /must name its currency, such as 30\.00 EUR/)
  assert.match(minimumFaults('30.00 EUR, 40.00 EUR')[0]!, /each currency once/)
})

test('given the command line’s spellings, then the rule’s text, or what to write', () => {
  assert.deepEqual(minimumOption('30 eur'), { text: '30.00 EUR' })
  assert.deepEqual(minimumOption(' 30.5 EUR ,35 usd '), { text: '30.50 EUR, 35.00 USD' })
  assert.deepEqual(minimumOption('0'), { text: '0.00' })
  assert.match((minimumOption('30') as { error: string }).error, /must name its currency/)
  assert.match((minimumOption('30.555 EUR') as { error: string }).error, /an amount and its currency/)
  assert.match((minimumOption('EUR 30') as { error: string }).error, /an amount and its currency/)
})
