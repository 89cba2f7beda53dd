import assert from 'node:assert/strict'
import { test } from 'node:test'
import { arrivalClockUs } from './arrival-clock.ts'

test('the arrival clock strictly increases, even within one microsecond', () => {
  let previous = arrivalClockUs()
  for (let i = 0; i < 10_000; i++) {
    const next = arrivalClockUs()
    assert.ok(next > previous, `${next} after ${previous}`)
    previous = next
  }
  // It is epoch microseconds: the wall clock (Date.now()), not the wall clock moved by the process's uptime.
  assert.ok(Math.abs(previous / 1000 - Date.now()) < 250, `${previous / 1000} vs ${Date.now()}`)
})
