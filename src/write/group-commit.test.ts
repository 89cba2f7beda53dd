import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { GroupCommitWriter, QueueFullError, WriterUnavailableError, type WriterOptions } from './group-commit.ts'

// The writer on its own, with a fake apply whose batches the test commits or fails by hand.
// Nothing here waits on a clock: the writer flushes at the next turn of the event loop, and the
// cool-down is crossed with node:test's mock of Date.

interface Call {
  batch: number[]
  commit(): void
  fail(error: Error): void
}

const DOWN = 'the database is down'

function fakeWriter(options: Partial<WriterOptions<number, string>> = {}) {
  const calls: Call[] = []
  const writer = new GroupCommitWriter<number, string>({
    apply: (batch) =>
      new Promise<string[]>((resolve, reject) => {
        calls.push({ batch: [...batch], commit: () => resolve(batch.map((n) => `committed ${n}`)), fail: reject })
      }),
    maxBatch: 100,
    maxQueue: 100,
    lanes: 1,
    laneOf: (n) => n,
    isUnavailable: (error) => (error as Error).message === DOWN,
    cooldownMs: 1000,
    // The tests drive the cool-down with mocked timers (Date).
    nowMs: () => Date.now(),
    ...options,
  })
  return { writer, calls, applied: () => calls.flatMap((c) => c.batch) }
}

/** Lets the writer run whatever it scheduled: a few turns of the event loop. */
async function turns(n = 3): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve))
}

/** What a promise has come to so far, without waiting for it. */
function track<T>(promise: Promise<T>) {
  const state: { settled: boolean; value?: T; error?: unknown } = { settled: false }
  promise.then(
    (value) => Object.assign(state, { settled: true, value }),
    (error: unknown) => Object.assign(state, { settled: true, error }),
  )
  return state
}

describe('batching', () => {
  test('webhooks submitted in one tick share one batch, and each gets its own result', async () => {
    const { writer, calls } = fakeWriter()
    const results = [1, 2, 3].map((n) => writer.submit(n))
    await turns()
    assert.deepEqual(
      calls.map((c) => c.batch),
      [[1, 2, 3]],
    )
    calls[0]!.commit()
    assert.deepEqual(await Promise.all(results), ['committed 1', 'committed 2', 'committed 3'])
  })

  test('a batch holds at most maxBatch webhooks; the rest follow in order', async () => {
    const { writer, calls } = fakeWriter({ maxBatch: 2 })
    const results = [1, 2, 3, 4, 5].map((n) => writer.submit(n))
    await turns()
    assert.deepEqual(
      calls.map((c) => c.batch),
      [[1, 2]],
    )
    calls[0]!.commit()
    await turns()
    assert.deepEqual(
      calls.map((c) => c.batch),
      [
        [1, 2],
        [3, 4],
      ],
    )
    calls[1]!.commit()
    await turns()
    calls[2]!.commit()
    assert.deepEqual(
      calls.map((c) => c.batch),
      [[1, 2], [3, 4], [5]],
    )
    assert.equal((await Promise.all(results)).length, 5)
  })

  test('webhooks that arrive while a commit is in flight wait for it and then share the next batch', async () => {
    const { writer, calls } = fakeWriter()
    const first = writer.submit(1)
    await turns()
    const later = [2, 3, 4].map((n) => writer.submit(n))
    await turns()
    const more = writer.submit(5)
    await turns()
    assert.deepEqual(
      calls.map((c) => c.batch),
      [[1]],
      'nothing else starts while the first batch commits',
    )
    calls[0]!.commit()
    assert.equal(await first, 'committed 1')
    await turns()
    assert.deepEqual(
      calls.map((c) => c.batch),
      [[1], [2, 3, 4, 5]],
    )
    calls[1]!.commit()
    assert.deepEqual(await Promise.all([...later, more]), ['committed 2', 'committed 3', 'committed 4', 'committed 5'])
  })

  test('an apply that throws instead of rejecting fails its batch, and the lane carries on', async () => {
    let throwNext = true
    const seen: number[][] = []
    const writer = new GroupCommitWriter<number, string>({
      apply: (batch) => {
        seen.push([...batch])
        if (throwNext) {
          throwNext = false
          throw new Error('bad batch')
        }
        return Promise.resolve(batch.map(String))
      },
      maxBatch: 10,
      maxQueue: 10,
      lanes: 1,
      laneOf: () => 0,
      isUnavailable: () => false,
      cooldownMs: 1000,
      nowMs: () => performance.now(),
    })
    await assert.rejects(writer.submit(1), /bad batch/)
    assert.equal(await writer.submit(2), '2')
    assert.deepEqual(seen, [[1], [2]])
  })
})

describe('lanes', () => {
  test('lanes commit concurrently, one batch in flight each, and a lane keeps submission order', async () => {
    const { writer, calls } = fakeWriter({ lanes: 2, laneOf: (n) => n % 2 })
    const results = [1, 2, 3, 4, 5, 6].map((n) => writer.submit(n))
    await turns()
    // Both lanes are in flight at once.
    assert.deepEqual(calls.map((c) => c.batch).sort(), [
      [1, 3, 5],
      [2, 4, 6],
    ])
    const odd = calls.find((c) => c.batch[0] === 1)!
    const even = calls.find((c) => c.batch[0] === 2)!
    const moreOdd = [7, 9].map((n) => writer.submit(n))
    const moreEven = writer.submit(8)
    await turns()
    assert.equal(calls.length, 2, 'a busy lane starts no second batch')
    // The even lane finishing first does not let the odd lane's queue overtake its batch in flight.
    even.commit()
    await turns()
    assert.deepEqual(calls.map((c) => c.batch).slice(2), [[8]])
    odd.commit()
    await turns()
    assert.deepEqual(calls.map((c) => c.batch).slice(3), [[7, 9]])
    calls[2]!.commit()
    calls[3]!.commit()
    assert.deepEqual(
      await Promise.all([...results, ...moreOdd, moreEven]),
      [1, 2, 3, 4, 5, 6, 7, 9, 8].map((n) => `committed ${n}`),
    )
  })

  test('negative, fractional or non-finite lane keys still land in a lane', async () => {
    const { writer, calls } = fakeWriter({ lanes: 3, laneOf: (n) => [-7, 2.5, Number.NaN, Number.POSITIVE_INFINITY][n]! })
    const results = [0, 1, 2, 3].map((n) => writer.submit(n))
    await turns()
    for (const c of calls) c.commit()
    assert.equal((await Promise.all(results)).length, 4)
  })
})

describe('the queue bound', () => {
  test('past maxQueue waiting webhooks, submit rejects with QueueFullError, and the refused webhook is never applied', async () => {
    const { writer, calls, applied } = fakeWriter({ maxQueue: 2, maxBatch: 10 })
    const inFlight = writer.submit(1)
    await turns()
    assert.deepEqual(applied(), [1])
    // The batch in flight does not count against the bound; the two waiting behind it do.
    const waiting = [2, 3].map((n) => writer.submit(n))
    await assert.rejects(writer.submit(4), QueueFullError)
    calls[0]!.commit()
    await inFlight
    await turns()
    calls[1]!.commit()
    await Promise.all(waiting)
    await writer.drain()
    assert.deepEqual(applied(), [1, 2, 3], 'the refused webhook 4 never reached apply')
    // Room again once the queue has gone down.
    const after = writer.submit(5)
    await turns()
    calls[2]!.commit()
    assert.equal(await after, 'committed 5')
  })

  test('submits in one tick past the bound are refused, the ones within it are batched', async () => {
    const { writer, calls, applied } = fakeWriter({ maxQueue: 3 })
    const outcomes = [1, 2, 3, 4, 5].map((n) => track(writer.submit(n)))
    await turns()
    assert.ok(outcomes[3]!.error instanceof QueueFullError)
    assert.ok(outcomes[4]!.error instanceof QueueFullError)
    calls[0]!.commit()
    await writer.drain()
    assert.deepEqual(applied(), [1, 2, 3])
    assert.deepEqual(
      outcomes.slice(0, 3).map((o) => o.value),
      ['committed 1', 'committed 2', 'committed 3'],
    )
  })
})

describe('trip and recovery', () => {
  test('an unavailable error fails the batch and everything waiting, refuses new webhooks during the cool-down, then a probe batch restores service', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 })
    const { writer, calls, applied } = fakeWriter({ lanes: 2, laneOf: (n) => n % 2, cooldownMs: 500 })
    const inFlight = track(writer.submit(1))
    await turns()
    const waiting = [3, 5, 2].map((n) => track(writer.submit(n)))
    await turns()
    assert.deepEqual(applied(), [1, 2], 'lane 1 busy with [1], lane 0 with [2]; 3 and 5 wait')

    const down = new Error(DOWN)
    calls[0]!.fail(down)
    await turns()
    assert.equal(inFlight.error, down, 'the failing batch gets the database error itself')
    for (const [i, n] of [3, 5].entries()) {
      assert.ok(waiting[i]!.error instanceof WriterUnavailableError, `webhook ${n} waiting behind it is refused`)
      assert.equal((waiting[i]!.error as WriterUnavailableError).cause, down)
    }
    assert.equal(waiting[2]!.settled, false, 'a batch already in flight on another lane runs to its end')
    calls[1]!.commit()
    await turns()
    assert.equal(waiting[2]!.value, 'committed 2')

    // During the cool-down new webhooks are refused at once and never applied.
    await assert.rejects(writer.submit(7), WriterUnavailableError)
    t.mock.timers.tick(499)
    await assert.rejects(writer.submit(9), WriterUnavailableError)
    await turns()
    assert.deepEqual(applied(), [1, 2], 'refused webhooks 3, 5, 7 and 9 never reached apply')

    // After it, the next batch probes the database; it commits and service resumes.
    t.mock.timers.tick(1)
    const probe = writer.submit(11)
    await turns()
    assert.deepEqual(calls.at(-1)!.batch, [11])
    calls.at(-1)!.commit()
    assert.equal(await probe, 'committed 11')
    const next = [13, 14].map((n) => writer.submit(n))
    await turns()
    for (const c of calls.slice(-2)) c.commit()
    assert.deepEqual(await Promise.all(next), ['committed 13', 'committed 14'])
  })

  test('a probe that fails again trips the writer again', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 })
    const { writer, calls } = fakeWriter({ cooldownMs: 100 })
    const first = writer.submit(1)
    await turns()
    calls[0]!.fail(new Error(DOWN))
    await assert.rejects(first, new RegExp(DOWN))
    t.mock.timers.tick(100)
    const probe = writer.submit(2)
    await turns()
    calls[1]!.fail(new Error(DOWN))
    await assert.rejects(probe, new RegExp(DOWN))
    await assert.rejects(writer.submit(3), WriterUnavailableError)
    assert.equal(calls.length, 2)
  })

  test('any other error fails only its batch: no cool-down, the webhooks behind it are applied', async () => {
    const { writer, calls } = fakeWriter()
    const first = writer.submit(1)
    await turns()
    const second = writer.submit(2)
    calls[0]!.fail(new Error('a refused row'))
    await assert.rejects(first, /a refused row/)
    await turns()
    calls[1]!.commit()
    assert.equal(await second, 'committed 2')
    const third = writer.submit(3)
    await turns()
    calls[2]!.commit()
    assert.equal(await third, 'committed 3')
  })
})

describe('drain', () => {
  test('resolves at once when nothing is pending', async () => {
    const { writer } = fakeWriter()
    const first = await Promise.race([writer.drain().then(() => 'drained'), turns(1).then(() => 'a turn later')])
    assert.equal(first, 'drained')
  })

  test('resolves only once everything submitted so far is settled, not waiting for what came after', async () => {
    const { writer, calls } = fakeWriter({ lanes: 2, laneOf: (n) => n % 2 })
    const a = track(writer.submit(1))
    const b = track(writer.submit(2))
    await turns()
    const behind = track(writer.submit(3))
    const drained = track(writer.drain())
    const later = track(writer.submit(4))
    await turns()
    assert.equal(drained.settled, false, 'nothing is settled yet')

    calls.find((c) => c.batch[0] === 2)!.commit()
    await turns()
    assert.equal(b.settled, true)
    assert.equal(drained.settled, false, 'webhook 1, and 3 behind it, are still pending')

    calls.find((c) => c.batch[0] === 1)!.fail(new Error('a refused row'))
    await turns()
    assert.equal(a.settled, true)
    assert.equal(drained.settled, false, 'webhook 3 is still pending')

    calls.find((c) => c.batch[0] === 3)!.commit()
    await turns()
    assert.equal(behind.value, 'committed 3')
    assert.equal(drained.settled, true, 'failed or committed, everything submitted before drain() is settled')
    assert.equal(later.settled, false, 'webhook 4, submitted after drain(), did not hold it up')

    calls.find((c) => c.batch[0] === 4)!.commit()
    await writer.drain()
    assert.equal(later.value, 'committed 4')
  })
})
