import { customAlphabet } from 'nanoid'
import { sql, type Kysely } from 'kysely'

/** A deployment's id: 12 of lowercase letters and digits, a valid NATS subject token. */
const deploymentId = customAlphabet('0123456789abcdefghijklmnopqrstuvwxyz', 12)

/**
 * The deployment: one row, made once with the database, whose id tells this database's change
 * feed apart from another's on a NATS they share (the relay's default subject prefix and its
 * message ids). A backup restored elsewhere keeps it: the same data is the same deployment.
 */
export const deployment = {
  async up(db: Kysely<any>): Promise<void> {
    await db.schema
      .createTable('deployment')
      .addColumn('one', 'integer', (c) =>
        c
          .primaryKey()
          .defaultTo(1)
          .check(sql`one = 1`),
      )
      .addColumn('id', 'text', (c) => c.notNull())
      .execute()
    await db.insertInto('deployment').values({ one: 1, id: deploymentId() }).execute()
  },
}
