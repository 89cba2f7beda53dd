import assert from 'node:assert/strict'
import { test } from 'node:test'
import { clockAt, systemClock } from './clock.ts'

test('the arrival clock strictly increases, even within one microsecond', () => {
  const clock = systemClock()
  let previous = clock.stampUs()
  for (let i = 0; i < 10_000; i++) {
    const next = clock.stampUs()
    assert.ok(next > previous, `${next} after ${previous}`)
    previous = next
  }
  // It is epoch microseconds: the wall clock (Date.now()), not the wall clock moved by the process's uptime.
  assert.ok(Math.abs(previous / 1000 - Date.now()) < 250, `${previous / 1000} vs ${Date.now()}`)
})

test("the system clock's time is never before a webhook that arrived before it was read", () => {
  const clock = systemClock()
  for (let i = 0; i < 10_000; i++) {
    const arrived = clock.stampUs()
    const batch = clock.nowUs()
    assert.ok(batch > arrived, `a batch at ${batch} after its webhook at ${arrived}`)
  }
})

test('two system clocks share one count: no microsecond is handed out twice in a process', () => {
  const [a, b] = [systemClock(), systemClock()]
  const seen = new Set<number>()
  for (let i = 0; i < 5_000; i++)
    for (const us of [a.stampUs(), b.nowUs()]) {
      assert.ok(!seen.has(us), `${us} twice`)
      seen.add(us)
    }
})

test("a test's clock sets the time; what it records is still stamped in order by the system's", () => {
  let now = Date.parse('2024-06-01T00:00:00Z')
  const clock = clockAt(() => now)
  assert.equal(clock.nowUs(), now * 1000)
  assert.equal(clock.nowMs(), now)
  now += 86_400_000
  assert.equal(clock.nowUs(), now * 1000)
  const first = clock.stampUs()
  assert.ok(clock.stampUs() > first)
  assert.ok(Math.abs(first / 1000 - Date.now()) < 250)
})
