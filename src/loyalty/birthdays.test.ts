import assert from 'node:assert/strict'
import { test } from 'node:test'
import { birthdayDue, birthdayFault, birthdayIn, birthdaysOnDate, customerChange, type StoredBirthday } from './birthdays.ts'

const us = (iso: string) => Date.parse(iso) * 1000
const shopSet = (month: number, day: number, setIso = '2020-01-01T00:00:00Z'): StoredBirthday => ({
  month,
  day,
  source: 'shop',
  setUs: us(setIso),
  customerSetUs: null,
})

test('a birthday is a real month and day, February 29 included; the fault names its field', () => {
  assert.equal(birthdayFault({ month: 2, day: 29 }), null)
  assert.equal(birthdayFault({ month: 12, day: 31 }), null)
  assert.equal(birthdayFault({ month: 2, day: 30 })?.field, 'day')
  assert.equal(birthdayFault({ month: 4, day: 31 })?.field, 'day')
  assert.equal(birthdayFault({ month: 13, day: 1 })?.field, 'month')
  assert.equal(birthdayFault({ month: 0, day: 1 })?.field, 'month')
})

test('February 29 falls on February 28 in a year without one, and is looked up on that day', () => {
  assert.equal(birthdayIn(2027, { month: 2, day: 29 }), '2027-02-28')
  assert.equal(birthdayIn(2028, { month: 2, day: 29 }), '2028-02-29')
  assert.equal(birthdayIn(2100, { month: 2, day: 29 }), '2100-02-28')
  assert.deepEqual(birthdaysOnDate('2027-02-28'), [
    { month: 2, day: 28 },
    { month: 2, day: 29 },
  ])
  assert.deepEqual(birthdaysOnDate('2028-02-28'), [{ month: 2, day: 28 }])
})

test("due on the shop's local day, once a year", () => {
  const b = shopSet(12, 25)
  // Auckland is UTC+13 in December: its 25th starts at 11:00 UTC on the 24th.
  assert.equal(birthdayDue('Pacific/Auckland', us('2026-12-24T10:59:59Z'), b, []), null)
  assert.equal(birthdayDue('Pacific/Auckland', us('2026-12-24T11:00:00Z'), b, []), 2026)
  assert.equal(birthdayDue('Pacific/Auckland', us('2026-12-25T10:59:59Z'), b, []), 2026)
  assert.equal(birthdayDue('Pacific/Auckland', us('2026-12-25T11:00:00Z'), b, []), null)
  assert.equal(birthdayDue('Pacific/Auckland', us('2026-12-24T11:00:00Z'), b, [2026]), null)
  assert.equal(birthdayDue('America/Los_Angeles', us('2026-12-25T07:59:59Z'), b, []), null)
  assert.equal(birthdayDue('America/Los_Angeles', us('2026-12-25T08:00:00Z'), b, []), 2026)
})

test('set by the customer: due only when set 30 days or more before the day, else from the next year', () => {
  const set = (iso: string): StoredBirthday => ({ month: 5, day: 1, source: 'customer', setUs: us(iso), customerSetUs: us(iso) })
  assert.equal(birthdayDue('UTC', us('2026-05-01T00:00:00Z'), set('2026-04-02T23:59:00Z'), []), null)
  assert.equal(birthdayDue('UTC', us('2026-05-01T00:00:00Z'), set('2026-04-01T23:59:00Z'), []), 2026)
  assert.equal(birthdayDue('UTC', us('2027-05-01T00:00:00Z'), set('2026-04-02T23:59:00Z'), []), 2027)
})

test('the customer changes their birthday once per 365 days; the same one again is no change', () => {
  const stored: StoredBirthday = { month: 6, day: 1, source: 'customer', setUs: us('2026-02-01T10:00:00Z'), customerSetUs: us('2026-02-01T10:00:00Z') }
  assert.deepEqual(customerChange('UTC', us('2026-03-01T00:00:00Z'), stored, { month: 6, day: 2 }), { allowed: false, from: '2027-02-01' })
  assert.deepEqual(customerChange('UTC', us('2026-03-01T00:00:00Z'), stored, { month: 6, day: 1 }), { allowed: true })
  assert.deepEqual(customerChange('UTC', us('2027-02-01T00:00:00Z'), stored, { month: 6, day: 2 }), { allowed: true })
  assert.deepEqual(customerChange('UTC', us('2026-03-01T00:00:00Z'), shopSet(6, 1), { month: 6, day: 2 }), { allowed: true })
  assert.deepEqual(customerChange('UTC', us('2026-03-01T00:00:00Z'), undefined, { month: 6, day: 2 }), { allowed: true })
})
