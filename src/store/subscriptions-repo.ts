import type { Kysely } from 'kysely'
import type { Tables } from './tables.ts'

// Outgoing webhook subscriptions and their deliveries. Secrets come in and go out sealed; the
// sender's writes are compiled queries, which it runs under its leader lock (Backend.leaderLock).

export interface SubscriptionRecord {
  id: number
  shopId: number
  url: string
  types: string[]
  /** Sealed. */
  secret: string
  /** Sealed; null when no rotation is in its grace. */
  oldSecret: string | null
  oldSecretUntilUs: number | null
  createdUs: number
  position: number
  attempts: number
  nextAttemptUs: number
  retryingSinceUs: number | null
  failing: boolean
  lastError: string | null
}

type Row = Tables['subscriptions'] & { id: number; attempts: number; next_attempt_us: number; failing: number }

const record = (r: Row): SubscriptionRecord => ({
  id: Number(r.id),
  shopId: Number(r.shop_id),
  url: r.url,
  types: JSON.parse(r.types) as string[],
  secret: r.secret,
  oldSecret: r.old_secret,
  oldSecretUntilUs: r.old_secret_until_us === null ? null : Number(r.old_secret_until_us),
  createdUs: Number(r.created_us),
  position: Number(r.position),
  attempts: Number(r.attempts),
  nextAttemptUs: Number(r.next_attempt_us),
  retryingSinceUs: r.retrying_since_us === null ? null : Number(r.retrying_since_us),
  failing: Number(r.failing) === 1,
  lastError: r.last_error,
})

export async function insertSubscription(
  db: Kysely<Tables>,
  s: { shopId: number; url: string; types: readonly string[]; secret: string; createdUs: number; position: number },
): Promise<SubscriptionRecord> {
  const row = await db
    .insertInto('subscriptions')
    .values({
      shop_id: s.shopId,
      url: s.url,
      types: JSON.stringify(s.types),
      secret: s.secret,
      old_secret: null,
      old_secret_until_us: null,
      created_us: s.createdUs,
      position: s.position,
      retrying_since_us: null,
      last_error: null,
    })
    .returningAll()
    .executeTakeFirstOrThrow()
  return record(row as Row)
}

/** A shop's subscriptions, oldest first. */
export async function shopSubscriptions(db: Kysely<Tables>, shopId: number): Promise<SubscriptionRecord[]> {
  const rows = await db.selectFrom('subscriptions').selectAll().where('shop_id', '=', shopId).orderBy('id').execute()
  return rows.map((r) => record(r as Row))
}

export async function findSubscription(db: Kysely<Tables>, shopId: number, id: number): Promise<SubscriptionRecord | undefined> {
  // By its key alone; a subscription of another shop is none of this one's.
  const row = await db.selectFrom('subscriptions').selectAll().where('id', '=', id).executeTakeFirst()
  return row && Number(row.shop_id) === shopId ? record(row as Row) : undefined
}

/** Removes a subscription (found first through its shop: findSubscription) and its deliveries; whether there was one. */
export async function deleteSubscription(db: Kysely<Tables>, id: number): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const gone = await trx.deleteFrom('subscriptions').where('id', '=', id).executeTakeFirst()
    if (Number(gone.numDeletedRows) === 0) return false
    await trx.deleteFrom('subscription_deliveries').where('subscription_id', '=', id).execute()
    return true
  })
}

/** A new secret; the one it replaces (sealed) keeps signing until `untilUs`. */
export async function rotateSubscriptionSecret(db: Kysely<Tables>, id: number, secret: string, oldSecret: string, untilUs: number): Promise<void> {
  await db.updateTable('subscriptions').set({ secret, old_secret: oldSecret, old_secret_until_us: untilUs }).where('id', '=', id).execute()
}

/** Deliveries start again after `position` (a replay): retry state cleared, failing no more. */
export async function replaySubscription(db: Kysely<Tables>, id: number, position: number): Promise<void> {
  await db
    .updateTable('subscriptions')
    .set({ position, attempts: 0, next_attempt_us: 0, retrying_since_us: null, failing: 0, last_error: null })
    .where('id', '=', id)
    .execute()
}

/** Ids of the subscriptions the sender may try at `nowUs` (not failing, not waiting for a retry), of every shop. */
export async function dueSubscriptionIds(db: Kysely<Tables>, nowUs: number): Promise<number[]> {
  const rows = await db.selectFrom('subscriptions').select('id').where('failing', '=', 0).where('next_attempt_us', '<=', nowUs).execute()
  return rows.map((r) => Number(r.id)).sort((x, y) => x - y)
}

/** How many subscriptions are failing, of every shop (for /metrics). */
export async function failingSubscriptionCount(db: Kysely<Tables>): Promise<number> {
  const row = await db
    .selectFrom('subscriptions')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('failing', '=', 1)
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

/** The subscription as its leader reads it, fresh, under its lock. */
export const subscriptionQuery = (db: Kysely<Tables>, id: number) => db.selectFrom('subscriptions').selectAll().where('id', '=', id).compile()
export const subscriptionOf = (rows: readonly unknown[]): SubscriptionRecord | undefined => (rows[0] ? record(rows[0] as Row) : undefined)

/** Every entry up to `position` is done: the retry state is cleared. */
export const advanceQuery = (db: Kysely<Tables>, id: number, position: number) =>
  db.updateTable('subscriptions').set({ position, attempts: 0, next_attempt_us: 0, retrying_since_us: null, last_error: null }).where('id', '=', id).compile()

/** A failed attempt: when the next comes, since when the entry fails, whether the subscription is failing now. */
export const retryQuery = (db: Kysely<Tables>, id: number, r: { attempts: number; nextAttemptUs: number; sinceUs: number; failing: boolean; error: string }) =>
  db
    .updateTable('subscriptions')
    .set({ attempts: r.attempts, next_attempt_us: r.nextAttemptUs, retrying_since_us: r.sinceUs, failing: r.failing ? 1 : 0, last_error: r.error })
    .where('id', '=', id)
    .compile()

export interface DeliveryRecord {
  position: number
  type: string
  status: 'delivered' | 'retrying' | 'failed'
  attempts: number
  responseStatus: number | null
  lastError: string | null
  updatedUs: number
}

/** The last state of one entry's delivery. */
export const saveDeliveryQuery = (db: Kysely<Tables>, subscriptionId: number, d: DeliveryRecord) => {
  const values = {
    status: d.status,
    attempts: d.attempts,
    response_status: d.responseStatus,
    last_error: d.lastError,
    updated_us: d.updatedUs,
  }
  return db
    .insertInto('subscription_deliveries')
    .values({ subscription_id: subscriptionId, position: d.position, type: d.type, ...values })
    .onConflict((oc) => oc.columns(['subscription_id', 'position']).doUpdateSet(values))
    .compile()
}

/** Deliveries kept per subscription: older ones are deleted as new ones are acknowledged. */
export const DELIVERIES_KEPT = 200

/** Deletes a subscription's deliveries older than its latest DELIVERIES_KEPT. */
export const trimDeliveriesQuery = (db: Kysely<Tables>, subscriptionId: number) =>
  db
    .deleteFrom('subscription_deliveries')
    .where('subscription_id', '=', subscriptionId)
    .where('position', '<', (eb) =>
      eb
        .selectFrom('subscription_deliveries')
        .select('position')
        .where('subscription_id', '=', subscriptionId)
        .orderBy('position', 'desc')
        .limit(1)
        .offset(DELIVERIES_KEPT - 1),
    )
    .compile()

/** A subscription's latest deliveries, newest position first. */
export async function recentDeliveries(db: Kysely<Tables>, subscriptionId: number, limit: number): Promise<DeliveryRecord[]> {
  const rows = await db
    .selectFrom('subscription_deliveries')
    .selectAll()
    .where('subscription_id', '=', subscriptionId)
    .orderBy('position', 'desc')
    .limit(limit)
    .execute()
  return rows.map((r) => ({
    position: Number(r.position),
    type: r.type,
    status: r.status as DeliveryRecord['status'],
    attempts: Number(r.attempts),
    responseStatus: r.response_status === null ? null : Number(r.response_status),
    lastError: r.last_error,
    updatedUs: Number(r.updated_us),
  }))
}
