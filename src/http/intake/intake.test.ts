import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { describe, test } from 'node:test'
import type { PointsCommand } from '../../batch/commands.ts'
import { PROBLEMS, type ProblemStatus } from '../../schemas/problems.ts'
import type { BatchResult } from '../../write/unit-of-work.ts'
import { GroupCommitWriter } from '../../write/group-commit.ts'
import { idempotencyKey, isEventId, NotStored, parseId, problem, ProblemError, submit, uuidOf, type ProblemType, type Writing } from './index.ts'

// The intake kit on its own: what the routes' answers are made of. The answers themselves are
// tested over HTTP (test/intake/hostile-input.test.ts, test/points/redemptions.test.ts, test/resilience/db-outage.test.ts).

const sha = (text: string) => createHash('sha256').update(text).digest('base64url')

describe('problem', () => {
  test('every type of PROBLEMS gets its status and title, then the detail and its extensions, in that order', () => {
    for (const status of Object.keys(PROBLEMS).map(Number) as ProblemStatus[]) {
      for (const type of PROBLEMS[status].types as readonly ProblemType[]) {
        const made = problem(type, 'why', { extra: 1 })
        assert.deepEqual(made, { status, type, title: PROBLEMS[status].title, detail: 'why', extra: 1 })
        assert.deepEqual(Object.keys(made), ['status', 'type', 'title', 'detail', 'extra'])
      }
    }
  })

  test('a type PROBLEMS does not list does not compile', () => {
    // @ts-expect-error: a misspelled type
    assert.throws(() => problem('not-fuond', 'why'))
  })
})

describe('ids', () => {
  test('a path id is a positive integer of at most 16 digits, exact as a number', () => {
    assert.equal(parseId('1'), 1)
    assert.equal(parseId('9007199254740991'), 9007199254740991)
    for (const text of ['0', '01', '-1', '1.0', '1e3', ' 1', '9007199254740993', '12345678901234567', '', 'abc', '1\u0000']) {
      assert.equal(parseId(text), undefined, JSON.stringify(text))
    }
  })

  test('redemption and event ids', () => {
    assert.equal(uuidOf('0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b'), '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b')
    assert.equal(uuidOf('0190A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5B'), '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b', 'either case, as the service writes it')
    assert.equal(uuidOf('0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5'), undefined)
    assert.ok(isEventId('0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b'))
    assert.ok(!isEventId('0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5'))
  })
})

describe('idempotency keys', () => {
  test('a webhook takes Idempotency-Key, else Webhook-Id, hashed as it is', () => {
    assert.equal(idempotencyKey({}, 'webhook'), null)
    assert.equal(idempotencyKey({ 'idempotency-key': '', 'webhook-id': 'w' }, 'webhook'), sha('w'))
    assert.equal(idempotencyKey({ 'idempotency-key': 'k', 'webhook-id': 'w' }, 'webhook'), sha('k'))
  })

  test('a redemption and an adjustment read Idempotency-Key only, each in its own namespace', () => {
    assert.equal(idempotencyKey({ 'webhook-id': 'w' }, 'redemption'), null)
    assert.equal(idempotencyKey({ 'idempotency-key': 'k' }, 'redemption'), sha('redemption\nk'))
    assert.equal(idempotencyKey({ 'idempotency-key': 'k' }, 'adjustment'), sha('adjustment\nk'))
  })

  test('a key longer than 255 characters is a 400 that names the headers read', () => {
    assert.notEqual(idempotencyKey({ 'idempotency-key': 'k'.repeat(255) }, 'redemption'), null)
    const refused = (headers: Record<string, string>, kind: 'webhook' | 'adjustment') => {
      try {
        idempotencyKey(headers, kind)
      } catch (err) {
        return err instanceof ProblemError ? err.problem : err
      }
      return undefined
    }
    assert.deepEqual(
      refused({ 'webhook-id': 'k'.repeat(256) }, 'webhook'),
      problem('malformed-request', 'the Idempotency-Key or Webhook-Id header is longer than 255 characters'),
    )
    assert.deepEqual(
      refused({ 'idempotency-key': 'k'.repeat(256) }, 'adjustment'),
      problem('malformed-request', 'the Idempotency-Key header is longer than 255 characters'),
    )
  })
})

describe('submit', () => {
  const command: PointsCommand = { command: 'cancel', shopId: 1, customerId: 2, redemptionId: 'r', atUs: 0 }

  /** A real writer whose batches end as `apply` says, and a count of the 503s by reason. */
  function writing(apply: () => Promise<BatchResult[]>, maxQueue = 10) {
    const reasons: string[] = []
    const writer = new GroupCommitWriter({
      apply,
      maxBatch: 10,
      maxQueue,
      lanes: 1,
      laneOf: () => 0,
      isUnavailable: (e) => (e as Error).message === 'down',
      cooldownMs: 60_000,
      nowMs: () => performance.now(),
    })
    const services = { writer, config: { RETRY_AFTER_SECONDS: 7 }, metrics: { unavailable: { inc: ({ reason }: { reason: string }) => reasons.push(reason) } } }
    return { services: services as unknown as Writing, reasons }
  }

  const refusal = async (promise: Promise<unknown>) => {
    try {
      await promise
    } catch (err) {
      assert.ok(err instanceof ProblemError, String(err))
      return { problem: err.problem, headers: err.headers, notStored: err instanceof NotStored }
    }
    assert.fail('the submit did not fail')
  }

  test('an outcome is answered as it is', async () => {
    const outcome = { status: 'not-found', detail: 'no such redemption' } as const
    const { services, reasons } = writing(async () => [outcome])
    assert.deepEqual(await submit(services, command, 'cancel'), outcome)
    assert.deepEqual(reasons, [])
  })

  test('a failed batch is a 503 naming the item, with Retry-After, and counted by the route', async () => {
    const { services, reasons } = writing(async () => [{ status: 'failed', error: new Error('a bad row') }])
    assert.deepEqual(await refusal(submit(services, command, 'cancel')), {
      problem: problem('unavailable', 'the cancel could not be stored; retry after the delay in Retry-After'),
      headers: { 'retry-after': '7' },
      notStored: true,
    })
    assert.deepEqual(reasons, [])
  })

  test('a full queue is a 503 of capacity, counted queue-full', async () => {
    let commit!: () => void
    const { services, reasons } = writing(() => new Promise((resolve) => (commit = () => resolve([{ status: 'not-found', detail: '' }]))), 1)
    const first = submit(services, command, 'cancel')
    assert.deepEqual(await refusal(submit(services, command, 'cancel')), {
      problem: problem('unavailable', 'the service is at capacity; retry after the delay in Retry-After'),
      headers: { 'retry-after': '7' },
      notStored: false,
    })
    assert.deepEqual(reasons, ['queue-full'])
    await new Promise((resolve) => setImmediate(resolve))
    commit()
    await first
  })

  test('a writer cooling down after the database failed is a 503 of the database, counted database; a command says nothing was changed', async () => {
    const { services, reasons } = writing(async () => {
      throw new Error('down')
    })
    const databaseDown = {
      problem: problem(
        'unavailable',
        'the database cannot be reached or did not answer in time (DB_TIMEOUT_MS); nothing was changed, retry after the delay in Retry-After',
      ),
      headers: { 'retry-after': '7' },
      notStored: false,
    }
    // The batch's own error goes on to the error handler, which answers a database error the same way.
    await assert.rejects(submit(services, command, 'cancel'), /^Error: down$/)
    assert.deepEqual(await refusal(submit(services, command, 'cancel')), databaseDown)
    assert.deepEqual(reasons, ['database', 'database'])
  })
})
