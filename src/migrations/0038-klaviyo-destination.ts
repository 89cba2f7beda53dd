import type { Kysely } from 'kysely'

/**
 * Where a subscription sends (docs/integrate/klaviyo.md): `webhook`, every subscription before
 * this, signed POSTs to its `url`; or `klaviyo`, events of Klaviyo's Create Event API, whose
 * private key is kept sealed in `secret` as a signing secret is (never in plain text), with
 * `key_hint` the masked form lists show (`pk_…a1b2`) and `referral_url` the shop's page the
 * customer's referral link points at (null: no link). Additive only: every row before it is a
 * webhook, and keeps its `url`.
 */
export const klaviyoDestination = {
  async up(db: Kysely<any>): Promise<void> {
    await db.schema
      .alterTable('subscriptions')
      .addColumn('destination', 'text', (c) => c.notNull().defaultTo('webhook'))
      .execute()
    await db.schema.alterTable('subscriptions').addColumn('key_hint', 'text').execute()
    await db.schema.alterTable('subscriptions').addColumn('referral_url', 'text').execute()
  },
}
