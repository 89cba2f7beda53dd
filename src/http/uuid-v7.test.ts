import assert from 'node:assert/strict'
import { test } from 'node:test'
import { validate, version } from 'uuid'
import { createUuidV7 } from './uuid-v7.ts'
import { systemClock } from '../clock.ts'

/** The 48-bit millisecond timestamp at the start of a UUIDv7. */
const msOf = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16)

test("ids are valid UUIDv7 carrying the clock's millisecond", () => {
  const clock = 1_780_000_000_123
  const next = createUuidV7(() => clock)
  for (let i = 0; i < 100; i++) {
    const id = next()
    assert.ok(validate(id), id)
    assert.equal(version(id), 7)
    assert.equal(msOf(id), clock)
  }
})

test('within one millisecond, across pool refills, ids strictly increase and never repeat', () => {
  const next = createUuidV7(() => 1_780_000_000_000)
  let previous = next()
  const seen = new Set([previous])
  // More than two pools' worth, so that refills happen between ids of one millisecond.
  for (let i = 0; i < 10_000; i++) {
    const id = next()
    assert.ok(id > previous, `${id} after ${previous}`)
    seen.add(id)
    previous = id
  }
  assert.equal(seen.size, 10_001)
})

test('a clock that steps back does not make ids go back', () => {
  let clock = 1_780_000_000_500
  const next = createUuidV7(() => clock)
  const before = next()
  clock -= 5_000
  const after = next()
  assert.ok(after > before)
  assert.equal(msOf(after), 1_780_000_000_500)
  clock += 10_000
  const later = next()
  assert.equal(msOf(later), clock)
})

test('a new millisecond starts a random counter: ids of different processes do not collide', () => {
  const a = createUuidV7(() => 1_780_000_000_000)
  const b = createUuidV7(() => 1_780_000_000_000)
  const ids = new Set<string>()
  for (let i = 0; i < 1000; i++) ids.add(a()).add(b())
  assert.equal(ids.size, 2000)
})

test("a generator on the system clock's stamps (as buildApp makes it) follows the wall clock", () => {
  const clock = systemClock()
  const uuidv7 = createUuidV7(() => Math.floor(clock.stampUs() / 1000))
  const start = Date.now()
  const id = uuidv7()
  assert.ok(msOf(id) >= start && msOf(id) <= Date.now() + 1, id)
})
