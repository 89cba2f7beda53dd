import assert from 'node:assert/strict'
import { test } from 'node:test'
import pino from 'pino'
import { PRUNE_BATCH } from '../repos/prune.ts'
import { startPruner } from './pruner.ts'
import { systemClock } from '../clock.ts'

// The pruner's loop, with a prune step that counts down a backlog in memory.

const log = pino({ level: 'silent' })

function backlog(size: number, fail: (call: number) => boolean = () => false) {
  let left = size
  const calls: number[] = []
  return {
    calls,
    left: () => left,
    async prune(_cutoffUs: number, limit: number) {
      calls.push(limit)
      if (fail(calls.length)) throw new Error('database away')
      const deleted = Math.min(left, limit)
      left -= deleted
      return { deleted, busyMs: 1 }
    },
  }
}

const until = async (check: () => boolean) => {
  for (let i = 0; i < 1000 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10))
  assert.ok(check())
}

test('a pass at start prunes the whole backlog in transactions of PRUNE_BATCH, and counts them', async () => {
  const b = backlog(PRUNE_BATCH * 3 + 7)
  const counted: number[] = []
  const stop = startPruner({
    retentionDays: 30,
    intervalSeconds: 3600,
    prune: b.prune,
    loaded: () => false,
    onPruned: (n) => counted.push(n),
    log,
    clock: systemClock(),
  })
  await until(() => b.left() === 0)
  await stop()
  assert.deepEqual(counted, [PRUNE_BATCH, PRUNE_BATCH, PRUNE_BATCH, 7])
  assert.ok(b.calls.every((limit) => limit === PRUNE_BATCH))
})

test('EVENT_RETENTION_DAYS=0 never prunes', async () => {
  const b = backlog(10)
  const stop = startPruner({ retentionDays: 0, intervalSeconds: 1, prune: b.prune, loaded: () => false, onPruned: () => {}, log, clock: systemClock() })
  await new Promise((resolve) => setTimeout(resolve, 50))
  await stop()
  assert.equal(b.calls.length, 0)
})

test('a failed pass is tried again at the next one; stop ends the wait between passes at once', async () => {
  const b = backlog(PRUNE_BATCH + 1, (call) => call === 1)
  const stop = startPruner({ retentionDays: 30, intervalSeconds: 1, prune: b.prune, loaded: () => true, onPruned: () => {}, log, clock: systemClock() })
  await until(() => b.left() === 0)
  // Now waiting out the interval; stop does not wait for it (no test of time: it would hang the suite).
  await stop()
  assert.equal(b.calls.length, 3)
})
