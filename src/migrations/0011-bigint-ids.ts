import { sql, type Kysely } from 'kysely'

/**
 * PostgreSQL: the serial ids (shops, api_keys, ledger, admins, audit_log) were `integer`, whose
 * 2^31 − 1 a busy program's ledger passes; they, their sequences and the columns that name them
 * (every `shop_id`, `admin_id`) become `bigint`, as the other ids already are. Each table is
 * rewritten once (one ALTER TABLE for all its columns), its rows and indexes kept. SQLite's
 * INTEGER is 64 bits already.
 */
const COLUMNS: Record<string, string[]> = {
  shops: ['id'],
  api_keys: ['id', 'shop_id'],
  events: ['shop_id'],
  customers: ['shop_id'],
  orders: ['shop_id'],
  ledger: ['id', 'shop_id'],
  redemptions: ['shop_id'],
  order_customer_links: ['shop_id'],
  admins: ['id'],
  admin_sessions: ['admin_id'],
  audit_log: ['id', 'admin_id', 'shop_id'],
  adjustments: ['shop_id'],
}

export function bigintIds(kind: 'sqlite' | 'postgres') {
  return {
    async up(db: Kysely<any>): Promise<void> {
      if (kind !== 'postgres') return
      for (const [table, columns] of Object.entries(COLUMNS)) {
        const alters = columns.map((c) => sql`ALTER COLUMN ${sql.id(c)} TYPE bigint`)
        await sql`ALTER TABLE ${sql.id(table)} ${sql.join(alters)}`.execute(db)
        if (columns.includes('id')) {
          // A serial's sequence keeps its own type (and so its maximum) until told otherwise.
          const { rows } = await sql<{ seq: string | null }>`SELECT pg_get_serial_sequence(${table}, 'id') AS seq`.execute(db)
          if (rows[0]?.seq) await sql`ALTER SEQUENCE ${sql.raw(rows[0].seq)} AS bigint`.execute(db)
        }
      }
    },
  }
}
