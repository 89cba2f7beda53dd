import assert from 'node:assert/strict'
import { test } from 'node:test'
import { bonusTarget, planBonusEntries, type BonusCustomer } from './bonuses.ts'
import { programAfterChange, tagSetOf } from './program.ts'
import { normalizeRule } from './rule.ts'

// The sign-up and newsletter bonuses: a pure function of the customer and the program's schedule,
// once per customer, from the moment the option took effect.

const T = 1_700_000_000_000_000
const schedule = programAfterChange([], normalizeRule({ signup_points: 50, newsletter_points: 20, exclude_tags: ['staff'] }), T)
const customer = (c: Partial<BonusCustomer> = {}): BonusCustomer => ({
  deleted: false,
  erased: false,
  emailErased: false,
  createdUs: T + 1,
  newsletterUs: T + 2,
  tags: tagSetOf([]),
  ...c,
})

test('sign-up: a customer created at or after the option took effect earns it, available at created_at', () => {
  assert.deepEqual(bonusTarget('signup', customer({ createdUs: T }), schedule), { points: 50, available_us: T, why: 'sign-up bonus' })
  assert.equal(bonusTarget('signup', customer({ createdUs: T - 1 }), schedule).points, 0, 'created before it')
  assert.equal(bonusTarget('signup', customer({ createdUs: null }), schedule).why, 'no created_at')
})

test('newsletter: the first subscription at or after the option took effect earns it; one subscribed before earns nothing', () => {
  assert.equal(bonusTarget('newsletter', customer({ newsletterUs: T + 5 }), schedule).points, 20)
  assert.equal(bonusTarget('newsletter', customer({ newsletterUs: T - 5 }), schedule).points, 0)
  assert.equal(bonusTarget('newsletter', customer({ newsletterUs: null }), schedule).why, 'not subscribed')
})

test('no bonus for a customer deleted, ever deleted, whose e-mail an erased customer had, or carrying an excluded tag', () => {
  for (const bonus of ['signup', 'newsletter'] as const) {
    assert.equal(bonusTarget(bonus, customer({ deleted: true }), schedule).reversal, 'forfeited')
    assert.equal(bonusTarget(bonus, customer({ erased: true }), schedule).reversal, 'forfeited')
    assert.equal(bonusTarget(bonus, customer({ emailErased: true }), schedule).reversal, 'forfeited')
    assert.deepEqual(bonusTarget(bonus, customer({ tags: tagSetOf(['STAFF']) }), schedule), {
      points: 0,
      available_us: bonus === 'signup' ? T + 1 : T + 2,
      why: 'the customer carries the excluded tag staff',
      reversal: 'excluded',
    })
  }
})

test('the entries: the first award under its own reason, a reversal of all of it, a change of amount or date as adjusted', () => {
  const target = (points: number, available_us: number, reversal?: 'excluded') => ({ points, available_us, why: '', ...(reversal ? { reversal } : {}) })
  assert.deepEqual(planBonusEntries('signup', null, target(50, T)), [{ points: 50, reason: 'signup', available_us: T }])
  assert.deepEqual(planBonusEntries('signup', { points: 50, available_us: T }, target(50, T)), [], 'again: nothing')
  assert.deepEqual(planBonusEntries('newsletter', { points: 20, available_us: T }, target(0, T, 'excluded')), [
    { points: -20, reason: 'excluded', available_us: T },
  ])
  assert.deepEqual(planBonusEntries('signup', { points: 50, available_us: T }, target(50, T + 9)), [
    { points: -50, reason: 'adjusted', available_us: T },
    { points: 50, reason: 'adjusted', available_us: T + 9 },
  ])
  assert.deepEqual(planBonusEntries('signup', { points: 50, available_us: T }, target(60, T)), [{ points: 10, reason: 'adjusted', available_us: T }])
  assert.deepEqual(planBonusEntries('signup', null, target(0, T)), [])
  assert.deepEqual(
    planBonusEntries('signup', { points: 50, available_us: T }, target(0, T)),
    [{ points: -50, reason: 'forfeited', available_us: T }],
    'taken back whole, for no tag: forfeited, not adjusted',
  )
})
