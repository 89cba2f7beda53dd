import { CompiledQuery } from 'kysely'
import type { StatementFactory } from '../statement-factory.ts'

// PostgreSQL's form of the write path's statements (src/write/statement-factory.ts). A set of keys or
// rows is one array parameter per column, so a text serves every batch size and is planned once
// per connection (the generic plan: plan_cache_mode = force_generic_plan). A lookup joins each
// key to the table through LATERAL … OFFSET 0, which the planner cannot flatten into a hash
// join or a scan filtered by the key array: each key is one index condition on (shop_id,
// column), on an empty table as on a large one.

const lateral = (table: string, columns: string, column: string, keyType: string, where = '') =>
  `unnest($2::${keyType}[]) AS k(v) CROSS JOIN LATERAL (SELECT ${columns} FROM ${table} WHERE shop_id = $1 AND ${column} = k.v${where} OFFSET 0) AS t`

export const postgresStatements: StatementFactory = {
  lookup(spec) {
    const text = `SELECT ${spec.select ?? 't.*'} FROM ${lateral(spec.table, spec.columns, spec.column, spec.keyType, spec.where ? ` ${spec.where}` : '')}${spec.groupBy ? ` GROUP BY ${spec.groupBy}` : ''}`
    return (shopId, keys) => CompiledQuery.raw(text, [shopId, keys]) as CompiledQuery<never>
  },

  ranges(spec) {
    const text =
      `SELECT t.* FROM unnest($2::bigint[], $3::bigint[], $4::bigint[]) AS k(v, lo, hi) CROSS JOIN LATERAL ` +
      `(SELECT ${spec.columns} FROM ${spec.table} WHERE shop_id = $1 AND ${spec.column} = k.v AND ${spec.range} BETWEEN k.lo AND k.hi OFFSET 0) AS t`
    return (shopId, triples) =>
      CompiledQuery.raw(text, [shopId, triples.map((t) => t[0]), triples.map((t) => t[1]), triples.map((t) => t[2])]) as CompiledQuery<never>
  },

  insert(spec) {
    // A bytea column is not an array of its values (pg would write each as hex text, twice the
    // bytes, and again in the array's text): the values travel as one binary parameter, cut by
    // offsets and lengths (null: a length of -1).
    const binary = spec.types.map((type) => type === 'bytea')
    const params: string[] = []
    const names: string[] = []
    const selected: string[] = []
    let n = 0
    spec.columns.forEach((column, i) => {
      if (!binary[i]) {
        params.push(`$${++n}::${spec.types[i]}[]`)
        names.push(column)
        selected.push(`u.${column}`)
        return
      }
      const buffer = ++n
      params.push(`$${++n}::integer[]`, `$${++n}::integer[]`)
      names.push(`${column}_at`, `${column}_length`)
      selected.push(`CASE WHEN u.${column}_length < 0 THEN NULL ELSE substring($${buffer}::bytea FROM u.${column}_at FOR u.${column}_length) END`)
    })
    const text =
      `INSERT INTO ${spec.table} (${spec.columns.join(', ')}) SELECT ${selected.join(', ')} ` +
      `FROM unnest(${params.join(', ')}) AS u(${names.join(', ')}) ${spec.conflict}`
    return (rows) => {
      if (rows.length === 0) return []
      const parameters: unknown[] = []
      spec.columns.forEach((_, i) => {
        if (!binary[i]) {
          parameters.push(rows.map((row) => row[i] ?? null))
          return
        }
        const values = rows.map((row) => row[i] as Uint8Array | null)
        const at: number[] = []
        const lengths: number[] = []
        let offset = 1
        for (const value of values) {
          at.push(offset)
          lengths.push(value === null ? -1 : value.byteLength)
          offset += value?.byteLength ?? 0
        }
        parameters.push(Buffer.concat(values.filter((v): v is Uint8Array => v !== null)), at, lengths)
      })
      return [CompiledQuery.raw(text, parameters)]
    }
  },

  update(spec) {
    // The rows found by key, then updated by ctid: a nested loop of TID scans, whatever the statistics.
    // (A row another transaction updated meanwhile is skipped; the batch's locks leave only pruning,
    // which deletes it, able to do that.)
    const held = spec.unlessHeld ? ` AND (${spec.unlessHeld.map((c, i) => `${c} IS DISTINCT FROM $${i + 3}`).join(' OR ')})` : ''
    const found = `SELECT t.ctid AS tid FROM ${lateral(spec.table, 'ctid', spec.column, spec.keyType, `${spec.where ? ` ${spec.where}` : ''}${held}`)}`
    const text = `UPDATE ${spec.table} SET ${spec.set} FROM (${found}) AS f WHERE ${spec.table}.ctid = f.tid RETURNING 1`
    return (shopId, keys, values) => CompiledQuery.raw(text, [shopId, keys, ...values])
  },

  delete(spec) {
    const found = `SELECT t.ctid AS tid FROM ${lateral(spec.table, 'ctid', spec.column, spec.keyType)}`
    const text = `DELETE FROM ${spec.table} USING (${found}) AS f WHERE ${spec.table}.ctid = f.tid RETURNING 1`
    return (shopId, keys) => CompiledQuery.raw(text, [shopId, keys])
  },

  text(sql) {
    return (parameters) => CompiledQuery.raw(sql, [...parameters])
  },

  appendFeed(total, rows) {
    if (rows.length === 0) return []
    // Two parts of the batch's one write statement (Session.counts): the head moves, the rows take what it returned.
    return [
      { ...CompiledQuery.raw('UPDATE feed_head SET position = position + $1 WHERE id = 1 RETURNING position', [total]), cte: 'feed_next' },
      // Each shop's head, after feed_head's (it reads feed_next, so runs once that lock is held) and in shop order.
      { ...CompiledQuery.raw(MOVE_SHOP_HEADS, [rows.map((r) => r.shopId), rows.map((r) => r.last - r.first + 1)]), cte: 'shop_next' },
      CompiledQuery.raw(APPEND_FEED, [
        total,
        rows.map((r) => r.last),
        rows.map((r) => r.first),
        rows.map((r) => r.shopId),
        rows.map((r) => r.createdUs),
        rows.map((r) => r.entries),
      ]),
    ]
  },
}

const MOVE_SHOP_HEADS =
  'INSERT INTO feed_shop_head AS h (shop_id, position) ' +
  'SELECT u.shop_id, u.n FROM feed_next, unnest($1::bigint[], $2::bigint[]) AS u(shop_id, n) ORDER BY u.shop_id ' +
  'ON CONFLICT (shop_id) DO UPDATE SET position = h.position + excluded.position RETURNING h.shop_id, h.position'

// One row per shop in a batch: the row's entries end at its shop's new head.
const APPEND_FEED =
  'INSERT INTO feed (position, first_position, shop_id, created_us, entries, shop_position, shop_first_position) ' +
  'SELECT head.position - $1 + u.last, head.position - $1 + u.first, u.shop_id, u.created_us, u.entries, sh.position, sh.position - (u.last - u.first) ' +
  'FROM feed_next AS head, unnest($2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::text[]) AS u(last, first, shop_id, created_us, entries) ' +
  'JOIN shop_next AS sh ON sh.shop_id = u.shop_id RETURNING 1'
