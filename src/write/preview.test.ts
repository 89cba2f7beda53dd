import assert from 'node:assert/strict'
import { test } from 'node:test'
import { customerHook, givenState, orderHook, unchanged } from '../../test/support/decider.ts'
import { parseProgram } from '../loyalty/program.ts'
import { normalizeRule } from '../loyalty/rule.ts'
import { emptyState } from '../batch/state.ts'
import { previewFrom, previewWebhook, type PreviewInput } from './preview.ts'

// The preview decides what an order would earn from the state loaded for it, and changes nothing
// it is given: the same state previews twice alike (preview.ts once consumed its state).

const T0 = Date.UTC(2024, 4, 1)
const at = (day: number) => new Date(T0 + day * 86_400_000).toISOString()
const NOW = (T0 + 20 * 86_400_000) * 1000

test('previewFrom leaves the state it is given as it was, and previews the same order twice alike', () => {
  const state = emptyState()
  const rule = normalizeRule({ points_per_unit: 1, tiers: [{ name: 'Silver', points: 100, multiplier: 2 }] })
  state.rules.set(1, { rule, version: 1 })
  state.programs.set(1, parseProgram(null, rule))
  const paid = (id: number, day: number, subtotal: string) =>
    orderHook({ id, customer: { id: 1 }, email: 'a@x.com', currency: 'EUR', subtotal, is_paid: true, processed_at: at(day), updated_at: at(day) })
  const { state: loaded } = givenState(state, [customerHook({ id: 1, email: 'a@x.com', created_at: at(0), updated_at: at(0) })], [paid(10, 1, '150.00')])
  // Order 10 again, at another price: the preview treats it as new, which it once did by deleting it from the state.
  const input: PreviewInput = {
    order: { id: 10, customer: { id: 1 }, email: 'a@x.com', currency: 'EUR', subtotal: '40.00', is_paid: true, processed_at: at(2), updated_at: at(2) },
  }
  const w = previewWebhook(1, input, NOW)
  const first = unchanged([loaded, w, input], () => previewFrom(loaded, w, input, NOW), { freeze: true })
  assert.ok(!('unknownCustomer' in first))
  assert.equal(first.owner.customerId, 1)
  assert.deepEqual(previewFrom(loaded, w, input, NOW), first)
  assert.ok(loaded.orders.size > 0, 'the stored order is still in the state')
})
