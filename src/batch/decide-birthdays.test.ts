import assert from 'node:assert/strict'
import { test } from 'node:test'
import { normalizeRule } from '../loyalty/rule.ts'
import type { StoredBirthday } from '../loyalty/birthdays.ts'
import { decideBirthday, type BirthdayBook } from './decide-birthdays.ts'

// The birthday decider, given/when/then over a book of stored birthdays and years paid: what it
// decides, and that it changes nothing it is given (the book is frozen).

const us = (iso: string) => Date.parse(iso) * 1000

function book(birthdays: [number, StoredBirthday][], years: [number, number[]][] = [], points = 50, zone = 'Pacific/Auckland'): BirthdayBook {
  const b: BirthdayBook = {
    rules: new Map([[1, { rule: normalizeRule({ birthday_points: points }), version: 3 }]]),
    timeZones: new Map([[1, zone]]),
    birthdays: new Map(birthdays.map(([id, s]) => [`1:${id}`, Object.freeze(s)])),
    birthdayYears: new Map(years.map(([id, y]) => [`1:${id}`, Object.freeze(y)])),
  }
  return Object.freeze(b)
}
const shop = (month: number, day: number): StoredBirthday => ({ month, day, source: 'shop', setUs: us('2026-01-01T00:00:00Z'), customerSetUs: null })

test("the sweep's command pays on the shop's day the year not paid yet, and nothing else", () => {
  const given = book([[7, shop(12, 25)]])
  const paid = decideBirthday(given, { command: 'birthday', shopId: 1, customerId: 7, atUs: us('2026-12-24T11:00:30Z') })
  assert.deepEqual(paid.reward, { shopId: 1, customerId: 7, year: 2026, points: 50, paidUs: us('2026-12-24T11:00:30Z') })
  assert.deepEqual(paid.outcome, { status: 'birthday-paid', points: 50 })
  assert.equal(paid.birthday, null)
  assert.equal(decideBirthday(given, { command: 'birthday', shopId: 1, customerId: 7, atUs: us('2026-12-24T10:59:00Z') }).reward, null)
  assert.equal(
    decideBirthday(book([[7, shop(12, 25)]], [[7, [2026]]]), { command: 'birthday', shopId: 1, customerId: 7, atUs: us('2026-12-24T11:00:30Z') }).reward,
    null,
  )
  assert.equal(
    decideBirthday(book([[7, shop(12, 25)]], [], 0), { command: 'birthday', shopId: 1, customerId: 7, atUs: us('2026-12-24T11:00:30Z') }).reward,
    null,
  )
  assert.equal(decideBirthday(book([]), { command: 'birthday', shopId: 1, customerId: 7, atUs: us('2026-12-24T11:00:30Z') }).reward, null)
})

test('a birthday set on the day by the shop pays at once; by the customer it does not, and their second change is refused', () => {
  const atUs = us('2026-12-24T12:00:00Z')
  const byShop = decideBirthday(book([]), { command: 'birthday-set', shopId: 1, customerId: 7, month: 12, day: 25, source: 'shop', atUs })
  assert.deepEqual(byShop.outcome, { status: 'birthday-set', birthday: { month: 12, day: 25 }, changed: true, paid: 50 })
  assert.deepEqual(byShop.birthday, { month: 12, day: 25, source: 'shop', setUs: atUs, customerSetUs: null })
  const byCustomer = decideBirthday(book([]), { command: 'birthday-set', shopId: 1, customerId: 7, month: 12, day: 25, source: 'customer', atUs })
  assert.deepEqual(byCustomer.outcome, { status: 'birthday-set', birthday: { month: 12, day: 25 }, changed: true, paid: 0 })
  const again = decideBirthday(book([[7, byCustomer.birthday!]]), {
    command: 'birthday-set',
    shopId: 1,
    customerId: 7,
    month: 12,
    day: 26,
    source: 'customer',
    atUs,
  })
  assert.deepEqual(again.outcome, { status: 'birthday-refused', from: '2027-12-25' })
  assert.equal(again.birthday, null)
  const same = decideBirthday(book([[7, byCustomer.birthday!]]), {
    command: 'birthday-set',
    shopId: 1,
    customerId: 7,
    month: 12,
    day: 25,
    source: 'customer',
    atUs,
  })
  assert.deepEqual([same.outcome.status, same.birthday], ['birthday-set', null])
})
