import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Parts } from './parts.ts'

test('parts stop in the reverse of the order they started in, each once', async () => {
  const parts = new Parts()
  const events: string[] = []
  for (const name of ['database', 'writer', 'feed', 'jobs']) {
    const started = await parts.start(
      name,
      async () => (events.push(`start ${name}`), name.toUpperCase()),
      (value) => void events.push(`stop ${value}`),
    )
    assert.equal(started, name.toUpperCase(), 'start hands back what the part made')
  }
  assert.deepEqual(parts.names, ['database', 'writer', 'feed', 'jobs'])
  await parts.stop()
  await parts.stop()
  assert.deepEqual(events, ['start database', 'start writer', 'start feed', 'start jobs', 'stop JOBS', 'stop FEED', 'stop WRITER', 'stop DATABASE'])
})

test('a part that fails to stop does not keep the earlier ones running; its failure is thrown after', async () => {
  const parts = new Parts()
  const stopped: string[] = []
  await parts.start(
    'database',
    () => 'db',
    () => void stopped.push('database'),
  )
  await parts.start(
    'writer',
    () => 'w',
    () => Promise.reject(new Error('the writer would not drain')),
  )
  await parts.start(
    'jobs',
    () => 'j',
    () => void stopped.push('jobs'),
  )
  await assert.rejects(parts.stop(), /the writer would not drain/)
  assert.deepEqual(stopped, ['jobs', 'database'])
})

test('a part whose start fails is not stopped; those before it are, by the caller', async () => {
  const parts = new Parts()
  const stopped: string[] = []
  await parts.start(
    'database',
    () => 'db',
    () => void stopped.push('database'),
  )
  await assert.rejects(
    parts.start(
      'writer',
      () => Promise.reject(new Error('no writer')),
      () => void stopped.push('writer'),
    ),
    /no writer/,
  )
  await parts.stop()
  assert.deepEqual(stopped, ['database'])
})
