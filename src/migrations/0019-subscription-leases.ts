import type { Kysely } from 'kysely'

/**
 * A delivery's lease on its subscription (src/jobs/webhook-sender.ts): until when (epoch µs) and by
 * which attempt (a random token) an entry is being sent, so that no other sender takes the
 * subscription meanwhile and no transaction stays open while the endpoint answers. Null while no
 * delivery holds it; a lease past its time is free to take (its process died mid-delivery).
 * Times are 64 bits, as every time since 0011. Additive only.
 */
export const subscriptionLeases = {
  async up(db: Kysely<any>): Promise<void> {
    await db.schema.alterTable('subscriptions').addColumn('lease_until_us', 'bigint').execute()
    await db.schema.alterTable('subscriptions').addColumn('lease_owner', 'text').execute()
  },
}
