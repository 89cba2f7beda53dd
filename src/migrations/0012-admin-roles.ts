import { sql, type Kysely } from 'kysely'

/**
 * Operators' roles: `operator` may look and change, `viewer` may only look (the admin auth hook
 * refuses a viewer's changes). Every operator made before keeps doing what they did: operator.
 */
export const adminRoles = {
  async up(db: Kysely<any>): Promise<void> {
    await db.schema
      .alterTable('admins')
      .addColumn('role', 'text', (c) =>
        c
          .notNull()
          .defaultTo('operator')
          .check(sql`role IN ('operator', 'viewer')`),
      )
      .execute()
  },
}
