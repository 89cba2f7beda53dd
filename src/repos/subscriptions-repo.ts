import { type ExpressionBuilder, type Kysely } from 'kysely'
import type { Tables } from '../db/tables.ts'
import { pageOf } from './page.ts'
import { takeShopRow } from './shop-row.ts'

// Outgoing webhook subscriptions and their deliveries. Secrets come in and go out sealed; the
// sender's writes are compiled queries, which it runs on the write connection (BatchWriter.write):
// each one checks the subscription's lease itself, so no lock is held while an endpoint answers.

/** Where a subscription sends: signed webhooks to its URL, or events to a Klaviyo account (its private key sealed in `secret`). */
export type Destination = { kind: 'webhook' } | { kind: 'klaviyo'; keyHint: string; referralUrl: string | null }

export interface SubscriptionRecord {
  id: number
  shopId: number
  /** A webhook's endpoint; empty for Klaviyo, which is sent to at KLAVIYO_API_URL. */
  url: string
  destination: Destination
  types: string[]
  /** Sealed: a webhook's signing secret, or a Klaviyo private key. */
  secret: string
  /** Sealed; null when no rotation is in its grace. */
  oldSecret: string | null
  oldSecretUntilUs: number | null
  createdUs: number
  position: number
  attempts: number
  nextAttemptUs: number
  retryingSinceUs: number | null
  /** An entry failed for SUBSCRIPTIONS_RETRY_HOURS: no attempts until a replay (column `failing` 1). */
  failing: boolean
  /** The endpoint answered 410 Gone: no attempts until a replay (column `failing` 2). */
  disabled: boolean
  lastError: string | null
  /** Until when a delivery in flight holds it (epoch µs); null while none does. */
  leaseUntilUs: number | null
}

/** The values of column `failing`: 0 the sender tries it; FAILING and DISABLED, it does not, until a replay. */
const FAILING = 1
const DISABLED = 2

type Row = Tables['subscriptions'] & { id: number; attempts: number; next_attempt_us: number; failing: number; destination: string }

const record = (r: Row): SubscriptionRecord => ({
  id: Number(r.id),
  shopId: Number(r.shop_id),
  url: r.url,
  destination: r.destination === 'klaviyo' ? { kind: 'klaviyo', keyHint: r.key_hint ?? 'pk_…', referralUrl: r.referral_url } : { kind: 'webhook' },
  types: JSON.parse(r.types) as string[],
  secret: r.secret,
  oldSecret: r.old_secret,
  oldSecretUntilUs: r.old_secret_until_us === null ? null : Number(r.old_secret_until_us),
  createdUs: Number(r.created_us),
  position: Number(r.position),
  attempts: Number(r.attempts),
  nextAttemptUs: Number(r.next_attempt_us),
  retryingSinceUs: r.retrying_since_us === null ? null : Number(r.retrying_since_us),
  failing: Number(r.failing) === FAILING,
  disabled: Number(r.failing) === DISABLED,
  lastError: r.last_error,
  leaseUntilUs: r.lease_until_us === null ? null : Number(r.lease_until_us),
})

/**
 * Stores a new subscription unless the shop has `cap` already (then null): one transaction that
 * first takes the shop's row for writing (PostgreSQL: its row lock; SQLite: the write lock), so
 * that two creates at once count one after the other and the cap holds exactly. `position` reads
 * where it starts (the shop's last feed entry) inside it.
 */
export async function insertSubscriptionCapped(
  db: Kysely<Tables>,
  cap: number,
  s: { shopId: number; url: string; destination: Destination; types: readonly string[]; secret: string; createdUs: number },
  position: (trx: Kysely<Tables>) => Promise<number>,
): Promise<SubscriptionRecord | null> {
  return db.transaction().execute(async (trx) => {
    // A write before the count: a count alone would lock nothing, and two creates would both see room.
    await takeShopRow(trx, s.shopId).execute()
    if ((await shopSubscriptionCount(trx, s.shopId)) >= cap) return null
    const row = await trx
      .insertInto('subscriptions')
      .values({
        shop_id: s.shopId,
        url: s.url,
        destination: s.destination.kind,
        key_hint: s.destination.kind === 'klaviyo' ? s.destination.keyHint : null,
        referral_url: s.destination.kind === 'klaviyo' ? s.destination.referralUrl : null,
        types: JSON.stringify(s.types),
        secret: s.secret,
        old_secret: null,
        old_secret_until_us: null,
        created_us: s.createdUs,
        position: await position(trx),
        retrying_since_us: null,
        last_error: null,
      })
      .returningAll()
      .executeTakeFirstOrThrow()
    return record(row as Row)
  })
}

/** A page of a shop's subscriptions, oldest first: at most `limit` after the subscription `afterId` (0 from the first), and whether more follow. */
export async function shopSubscriptionPage(
  db: Kysely<Tables>,
  shopId: number,
  afterId: number,
  limit: number,
): Promise<{ rows: SubscriptionRecord[]; more: boolean }> {
  const rows = await db
    .selectFrom('subscriptions')
    .selectAll()
    .where('shop_id', '=', shopId)
    .where('id', '>', afterId)
    .orderBy('id')
    .limit(limit + 1)
    .execute()
  return pageOf(rows, limit, (r) => record(r as Row))
}

/** Every subscription of a shop, oldest first, page by page. */
export async function shopSubscriptions(db: Kysely<Tables>, shopId: number): Promise<SubscriptionRecord[]> {
  const all: SubscriptionRecord[] = []
  for (let page = await shopSubscriptionPage(db, shopId, 0, 500); ; page = await shopSubscriptionPage(db, shopId, all[all.length - 1]!.id, 500)) {
    all.push(...page.rows)
    if (!page.more) return all
  }
}

/** How many subscriptions a shop has (SUBSCRIPTIONS_PER_SHOP caps them). */
export async function shopSubscriptionCount(db: Kysely<Tables>, shopId: number): Promise<number> {
  const row = await db
    .selectFrom('subscriptions')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('shop_id', '=', shopId)
    .executeTakeFirstOrThrow()
  return Number(row.n)
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

/** No delivery holds the subscription at `nowUs`: no lease, or one past its time (its process died mid-delivery). */
const unleased = (nowUs: number) => (eb: ExpressionBuilder<Tables, 'subscriptions'>) =>
  eb.or([eb('lease_until_us', 'is', null), eb('lease_until_us', '<=', nowUs)])

/** The subscriptions the sender may try at `nowUs` (not failing, not waiting for a retry, no delivery in flight), of every shop, oldest first: each one's shop, and whether it is retrying a failure. */
export async function dueSubscriptions(db: Kysely<Tables>, nowUs: number): Promise<{ id: number; shopId: number; retrying: boolean }[]> {
  const rows = await db
    .selectFrom('subscriptions')
    .select(['id', 'shop_id', 'attempts'])
    .where('failing', '=', 0)
    .where('next_attempt_us', '<=', nowUs)
    .where(unleased(nowUs))
    .execute()
  return rows.map((r) => ({ id: Number(r.id), shopId: Number(r.shop_id), retrying: Number(r.attempts) > 0 })).sort((x, y) => x.id - y.id)
}

/** How many subscriptions are failing, or disabled (410 Gone), of every shop (for /metrics). */
export async function failingSubscriptionCount(db: Kysely<Tables>, which: 'failing' | 'disabled' = 'failing'): Promise<number> {
  const row = await db
    .selectFrom('subscriptions')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('failing', '=', which === 'failing' ? FAILING : DISABLED)
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

/** The subscription as the sender reads it, fresh, before it claims it (claimQuery). */
export const subscriptionQuery = (db: Kysely<Tables>, id: number) => db.selectFrom('subscriptions').selectAll().where('id', '=', id).compile()
export const subscriptionOf = (rows: readonly unknown[]): SubscriptionRecord | undefined => (rows[0] ? record(rows[0] as Row) : undefined)

/** A delivery's hold on its subscription: the attempt's token, and the position the entry it sends follows. */
export interface Lease {
  subscriptionId: number
  owner: string
  position: number
}

/**
 * Takes `sub` for one delivery, `owner`'s until `untilUs`, if it is still as the sender read it
 * (due, and not failing) at `nowUs`: the same progress and attempts (an outcome changes one or the
 * other, as does a replay that changes anything), and no delivery in flight. One statement, so of
 * two senders that read the same row only one takes it; it returns the id when it did.
 */
export const claimQuery = (db: Kysely<Tables>, sub: SubscriptionRecord, lease: { owner: string; untilUs: number }, nowUs: number) =>
  db
    .updateTable('subscriptions')
    .set({ lease_until_us: lease.untilUs, lease_owner: lease.owner })
    .where('id', '=', sub.id)
    .where('position', '=', sub.position)
    .where('attempts', '=', sub.attempts)
    .where(unleased(nowUs))
    .returning('id')
    .compile()

const cleared = { attempts: 0, next_attempt_us: 0, retrying_since_us: null, last_error: null }

/** The entries after `from` up to `to` are none of this subscription's: it moves past them, unless it moved or a delivery holds it. */
export const skipQuery = (db: Kysely<Tables>, id: number, from: number, to: number, nowUs: number) =>
  db
    .updateTable('subscriptions')
    .set({ position: to, ...cleared })
    .where('id', '=', id)
    .where('position', '=', from)
    .where(unleased(nowUs))
    .compile()

/** What a delivery's outcome does to its subscription: every entry up to `advanceTo` is done (the retry state is cleared), or a retry's state. */
export type Progress =
  | { advanceTo: number }
  | {
      retry: {
        attempts: number
        nextAttemptUs: number
        sinceUs: number
        /** No more attempts until a replay: the retry window ran out. */
        failing: boolean
        /** No more attempts until a replay: the endpoint answered 410 Gone. */
        disabled?: boolean
        error: string
      }
    }

const progressSet = (p: Progress) =>
  'advanceTo' in p
    ? { position: p.advanceTo, ...cleared }
    : {
        attempts: p.retry.attempts,
        next_attempt_us: p.retry.nextAttemptUs,
        retrying_since_us: p.retry.sinceUs,
        failing: p.retry.disabled ? DISABLED : p.retry.failing ? FAILING : 0,
        last_error: p.retry.error,
      }

/** The retry state, set as a failed attempt sets it (tests make a subscription that has failed for long). */
export const retryQuery = (db: Kysely<Tables>, id: number, r: Extract<Progress, { retry: unknown }>['retry']) =>
  db
    .updateTable('subscriptions')
    .set(progressSet({ retry: r }))
    .where('id', '=', id)
    .compile()

/**
 * A leased delivery's outcome, for one transaction (BatchWriter.write), each statement written only
 * while `lease` is still its owner's: the entry's delivery row (and, once acknowledged, the oldest
 * rows trimmed), then the progress with the lease released, unless a replay moved the position
 * meanwhile, then the lease released in that case. The last two return the id when they wrote;
 * neither does when the lease was lost (it ran out and another sender took the subscription, or
 * the subscription was removed): then nothing at all is written.
 */
export function outcomeQueries(db: Kysely<Tables>, lease: Lease, delivery: DeliveryRecord, progress: Progress) {
  const release = { lease_until_us: null, lease_owner: null }
  const held = db.updateTable('subscriptions').where('id', '=', lease.subscriptionId).where('lease_owner', '=', lease.owner)
  return [
    saveDeliveryQuery(db, lease, delivery),
    ...('advanceTo' in progress ? [trimDeliveriesQuery(db, lease.subscriptionId)] : []),
    held
      .set({ ...progressSet(progress), ...release })
      .where('position', '=', lease.position)
      .returning('id')
      .compile(),
    held.set(release).returning('id').compile(),
  ]
}

/** Gives a lease back without an outcome (the process is stopping): the entry is sent again, by whichever sender comes next. */
export const releaseQuery = (db: Kysely<Tables>, lease: Lease) =>
  db
    .updateTable('subscriptions')
    .set({ lease_until_us: null, lease_owner: null })
    .where('id', '=', lease.subscriptionId)
    .where('lease_owner', '=', lease.owner)
    .compile()

export interface DeliveryRecord {
  position: number
  type: string
  /** Klaviyo's also `skipped` (not sent: no customer, or an erased one) and `refused` (Klaviyo refused it for good: not sent again). */
  status: 'delivered' | 'retrying' | 'failed' | 'skipped' | 'refused'
  attempts: number
  responseStatus: number | null
  lastError: string | null
  updatedUs: number
}

/** The last state of one entry's delivery, while `lease` is its owner's (a row of the subscription's so held, or none). */
const saveDeliveryQuery = (db: Kysely<Tables>, lease: Lease, d: DeliveryRecord) =>
  db
    .insertInto('subscription_deliveries')
    .columns(['subscription_id', 'position', 'type', 'status', 'attempts', 'response_status', 'last_error', 'updated_us'])
    .expression((eb) =>
      eb
        .selectFrom('subscriptions')
        // Typed: PostgreSQL reads a parameter in a select list as text.
        .select([
          'id',
          eb.cast<number>(eb.val(d.position), 'bigint').as('position'),
          eb.cast<string>(eb.val(d.type), 'text').as('type'),
          eb.cast<string>(eb.val(d.status), 'text').as('status'),
          eb.cast<number>(eb.val(d.attempts), 'integer').as('attempts'),
          eb.cast<number | null>(eb.val(d.responseStatus), 'integer').as('response_status'),
          eb.cast<string | null>(eb.val(d.lastError), 'text').as('last_error'),
          eb.cast<number>(eb.val(d.updatedUs), 'bigint').as('updated_us'),
        ])
        .where('id', '=', lease.subscriptionId)
        .where('lease_owner', '=', lease.owner),
    )
    .onConflict((oc) =>
      oc.columns(['subscription_id', 'position']).doUpdateSet((eb) => ({
        status: eb.ref('excluded.status'),
        attempts: eb.ref('excluded.attempts'),
        response_status: eb.ref('excluded.response_status'),
        last_error: eb.ref('excluded.last_error'),
        updated_us: eb.ref('excluded.updated_us'),
      })),
    )
    .compile()

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
