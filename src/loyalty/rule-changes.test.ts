import assert from 'node:assert/strict'
import { test } from 'node:test'
import { DEFAULT_RULE, normalizeRule } from './rule.ts'
import { ruleChanges } from './rule-changes.ts'

test('the same rule changes nothing', () => {
  assert.deepEqual(ruleChanges(DEFAULT_RULE, normalizeRule({})), {})
})

test('each changed field is listed with its old and new value, the others not', () => {
  const after = normalizeRule({ points_per_unit: 2, currency_rates: { EUR: 1 }, expire_after_days: 365 })
  assert.deepEqual(ruleChanges(DEFAULT_RULE, after), {
    points_per_unit: { from: 1, to: 2 },
    currency_rates: { from: {}, to: { EUR: 1 } },
    expire_after_days: { from: 0, to: 365 },
  })
})

test('a field the old rule lacked changes from null', () => {
  const before = { ...DEFAULT_RULE } as Partial<typeof DEFAULT_RULE>
  delete before.expire_after_days
  assert.deepEqual(ruleChanges(before as typeof DEFAULT_RULE, DEFAULT_RULE), { expire_after_days: { from: null, to: 0 } })
})
