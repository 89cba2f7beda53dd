import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyBaseLogger } from 'fastify'
import { startLoop } from './loop.ts'
import { reportOncePer } from './report.ts'
import { systemClock } from '../clock.ts'

// The jobs' one loop, with passes that wait for the test to let them end: what runs when, told by
// counts, never by how long anything took.

const silent = () => {}
const clock = systemClock()

function gate() {
  let open!: () => void
  const opened = new Promise<void>((resolve) => (open = resolve))
  return { opened, open }
}

const until = async (check: () => boolean) => {
  for (let i = 0; i < 1000 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 5))
  assert.ok(check())
}

test('kicks while a pass runs make one more pass right after it, not one each', async () => {
  const gates = [gate(), gate()]
  let passes = 0
  const loop = startLoop({ pass: async () => gates[passes++]?.opened, everyMs: 0, report: silent, failure: 'x', clock })
  loop.kick()
  await until(() => passes === 1)
  loop.kick()
  loop.kick()
  gates[0]!.open()
  await until(() => passes === 2)
  gates[1]!.open()
  await loop.stop()
  assert.equal(passes, 2)
})

test('run joins the pass in progress and gives its result; stop waits for it and starts none after', async () => {
  const g = gate()
  let passes = 0
  const loop = startLoop({ pass: async () => (await g.opened, ++passes), firstMs: 0, everyMs: 1, report: silent, failure: 'x', clock })
  const joined = loop.run()
  const stopped = loop.stop()
  g.open()
  assert.equal(await joined, 1)
  await stopped
  await new Promise((resolve) => setTimeout(resolve, 20))
  assert.equal(passes, 1)
})

test('a failed pass is reported, and the next one comes at its time', async () => {
  const reported: string[] = []
  let passes = 0
  const loop = startLoop({
    pass: async () => {
      if (++passes === 1) throw new Error('away')
    },
    firstMs: 0,
    everyMs: 1,
    report: (cause) => reported.push(cause),
    failure: 'the pass failed',
    clock,
  })
  await until(() => passes >= 2)
  await loop.stop()
  assert.deepEqual(reported, ['the pass failed'])
})

test('a kick with a delay brings the next pass sooner than the interval; stop cuts a pause short', async () => {
  let passes = 0
  const loop = startLoop({ pass: async () => void passes++, everyMs: 3_600_000, report: silent, failure: 'x', clock })
  loop.kick(1)
  await until(() => passes === 1)
  const pausing = loop.pause(3_600_000)
  await loop.stop()
  await pausing
  assert.equal(passes, 1)
})

test('the report says each cause once per half minute', () => {
  const lines: string[] = []
  const log = { warn: (_: unknown, message: string) => lines.push(message) } as unknown as FastifyBaseLogger
  const report = reportOncePer(() => log, clock)
  report('a', new Error('1'), 'a failed')
  report('a', new Error('2'), 'a failed')
  report('b', new Error('3'), 'b failed')
  assert.deepEqual(lines, ['a failed', 'b failed'])
})
