import { v7 as uuidv7 } from 'uuid'
import { arrivalClockUs } from '../src/domain/time.ts'
import { changeFor, type Topic, type Webhook } from '../src/domain/webhook.ts'
import { issueKey } from '../src/keys/issue-key.ts'
import { batchApplier } from '../src/store/apply-batch.ts'
import { migrate, openBackend } from '../src/store/database.ts'
import { compileStatements } from '../src/store/statements.ts'
import { nextRequest } from './mix.ts'

/** Migrates the database and returns a new key for the benchmark's shop. */
export async function prepareDatabase(url: string): Promise<string> {
  const backend = openBackend(url)
  try {
    await migrate(backend)
    return (await issueKey(backend.db, 'bench')).key
  } finally {
    await backend.close()
  }
}

/** Stores `count` webhooks of the benchmark mix through the real write path, without HTTP. */
export async function preload(url: string, count: number): Promise<void> {
  const backend = openBackend(url)
  try {
    const st = compileStatements(backend)
    const applyBatch = batchApplier(backend, st)
    const shop = await backend.db.selectFrom('shops').select('id').where('name', '=', 'bench').executeTakeFirstOrThrow()
    const key = await backend.db.selectFrom('api_keys').select('id').where('shop_id', '=', shop.id).executeTakeFirstOrThrow()
    for (let done = 0; done < count; ) {
      const batch: Webhook[] = []
      for (let i = 0; i < 2000 && done < count; i++, done++) {
        const next = nextRequest()
        const topic = next.path.split('/').slice(-2).join('/') as Topic
        const body = JSON.parse(next.body)
        const receivedUs = arrivalClockUs()
        const change = changeFor(topic, body, receivedUs)
        batch.push({
          eventId: uuidv7(), shopId: shop.id, keyId: key.id, topic, receivedUs, body: Buffer.from(next.body), headers: '{}',
          dedupKey: `b:${uuidv7()}`, resourceId: body.id, customerId: change.kind === 'customer' ? change.customer.id : (change.customer?.id ?? null),
          change, errors: null,
        })
      }
      await applyBatch(batch)
      if (done % 100_000 === 0) process.stderr.write(`  ${done}\n`)
    }
  } finally {
    await backend.close()
  }
}
