import assert from 'node:assert/strict'
import { test } from 'node:test'
import { DeliveryQueue } from './delivery-queue.ts'

const steady = (id: number, shopId: number) => ({ id, shopId, struggling: false })
const struggling = (id: number, shopId: number) => ({ id, shopId, struggling: true })

/** Takes and finishes one at a time: the order subscriptions are served in. */
function order(queue: DeliveryQueue): number[] {
  const out: number[] = []
  for (let t = queue.take(); t; t = queue.take()) {
    out.push(t.id)
    queue.done(t.id)
  }
  return out
}

test("shops take turns: one shop's many subscriptions do not queue ahead of another's one", () => {
  const queue = new DeliveryQueue({ steady: 1, struggling: 1 })
  for (let id = 1; id <= 1000; id++) queue.offer(steady(id, 1))
  queue.offer(steady(5000, 2))
  queue.offer(steady(5001, 3))
  assert.deepEqual(order(queue).slice(0, 6), [1, 5000, 5001, 2, 3, 4])
})

test('a struggling subscription never takes a steady slot, however many are free', () => {
  const queue = new DeliveryQueue({ steady: 4, struggling: 1 })
  for (let id = 1; id <= 4; id++) queue.offer(struggling(id, id))
  assert.deepEqual(queue.take(), { id: 1, pool: 'struggling' })
  assert.equal(queue.take(), undefined, 'the struggling slot is held; steady ones stay free for the healthy')
  queue.offer(steady(9, 9))
  assert.deepEqual(queue.take(), { id: 9, pool: 'steady' })
  assert.deepEqual(queue.held, { steady: 1, struggling: 1 })
})

test('a steady delivery that is slow gives its slot to the next in line, and counts as struggling until done', () => {
  const queue = new DeliveryQueue({ steady: 2, struggling: 2 })
  for (let id = 1; id <= 3; id++) queue.offer(steady(id, id))
  assert.equal(queue.take()!.id, 1)
  assert.equal(queue.take()!.id, 2)
  assert.equal(queue.take(), undefined)
  queue.slow(1)
  assert.deepEqual(queue.take(), { id: 3, pool: 'steady' })
  assert.deepEqual(queue.held, { steady: 2, struggling: 1 })
  queue.slow(1)
  assert.deepEqual(queue.held, { steady: 2, struggling: 1 }, 'twice slow is once')
  queue.done(1)
  assert.deepEqual(queue.held, { steady: 2, struggling: 0 })
  assert.equal(queue.busy, 2)
})

test('a subscription is in one place at a time: offered again while waiting or served, it is not doubled; once done it may come again', () => {
  const queue = new DeliveryQueue({ steady: 1, struggling: 1 })
  queue.offer(steady(1, 1))
  queue.offer(steady(1, 1))
  queue.offer(struggling(1, 1))
  const t = queue.take()!
  queue.offer(steady(1, 1))
  assert.equal(queue.take(), undefined)
  queue.done(t.id)
  assert.equal(queue.take(), undefined, 'not offered again yet')
  queue.offer(steady(1, 1))
  assert.equal(queue.take()!.id, 1)
})

test('clear empties the lines; those being served stay busy until done', () => {
  const queue = new DeliveryQueue({ steady: 1, struggling: 1 })
  queue.offer(steady(1, 1))
  queue.offer(steady(2, 1))
  queue.take()
  queue.clear()
  assert.equal(queue.busy, 1)
  queue.done(1)
  assert.equal(queue.take(), undefined)
  queue.offer(steady(2, 1))
  assert.equal(queue.take()!.id, 2, 'a cleared one may be offered again')
})
