import { CompiledQuery } from 'kysely'
import type { StatementFactory } from '../statement-factory.ts'

// SQLite's form of the write path's statements (src/write/statement-factory.ts). Statements run
// in-process, so a row costs no round trip: each row is one run of a statement prepared once,
// rather than a multi-row text that changes with the batch's size. Keys come as one JSON
// parameter, looked up through json_each: SEARCH … USING INDEX (shop_id=? AND column=?).

export const sqliteStatements: StatementFactory = {
  lookup(spec) {
    const text =
      `SELECT ${spec.select ?? 't.*'} FROM (SELECT ${spec.columns} FROM ${spec.table} ` +
      `WHERE shop_id = ? AND ${spec.column} IN (SELECT value FROM json_each(?))${spec.where ? ` ${spec.where}` : ''}) AS t` +
      `${spec.groupBy ? ` GROUP BY ${spec.groupBy}` : ''}`
    return (shopId, keys) => CompiledQuery.raw(text, [shopId, JSON.stringify(keys)]) as CompiledQuery<never>
  },

  ranges(spec) {
    // CROSS JOIN keeps the triples the outer loop: each is one search of the index.
    const text =
      `SELECT ${spec.columns.replace(/(^|, )/g, '$1t.')} FROM json_each(?) AS k CROSS JOIN ${spec.table} AS t ` +
      `ON t.shop_id = ? AND t.${spec.column} = k.value ->> 0 AND t.${spec.range} BETWEEN k.value ->> 1 AND k.value ->> 2`
    return (shopId, triples) => CompiledQuery.raw(text, [JSON.stringify(triples), shopId]) as CompiledQuery<never>
  },

  insert(spec) {
    const text = `INSERT INTO ${spec.table} (${spec.columns.join(', ')}) VALUES (${spec.columns.map(() => '?').join(', ')}) ${spec.conflict}`
    return (rows) => rows.map((row) => CompiledQuery.raw(text, row as unknown[]))
  },

  update(spec) {
    // The SET list is written with PostgreSQL's $3, $4, … in order: here they are plain ?s, bound first.
    const set = spec.set.replace(/\$\d+/g, '?')
    const held = spec.unlessHeld ? ` AND (${spec.unlessHeld.map((c) => `${c} IS NOT ?`).join(' OR ')})` : ''
    const text = `UPDATE ${spec.table} SET ${set} WHERE shop_id = ? AND ${spec.column} IN (SELECT value FROM json_each(?))${spec.where ? ` ${spec.where}` : ''}${held} RETURNING 1`
    return (shopId, keys, values) =>
      CompiledQuery.raw(text, [...values, shopId, JSON.stringify(keys), ...(spec.unlessHeld ? values.slice(0, spec.unlessHeld.length) : [])])
  },

  delete(spec) {
    const text = `DELETE FROM ${spec.table} WHERE shop_id = ? AND ${spec.column} IN (SELECT value FROM json_each(?)) RETURNING 1`
    return (shopId, keys) => CompiledQuery.raw(text, [shopId, JSON.stringify(keys)])
  },

  text(sql) {
    const text = sql.replace(/\$\d+/g, '?')
    return (parameters) => CompiledQuery.raw(text, [...parameters])
  },

  appendFeed(total, rows) {
    if (rows.length === 0) return []
    // One writer at a time: the head moves first, and each row reads where it ended.
    return [
      CompiledQuery.raw('UPDATE feed_head SET position = position + ? WHERE id = 1 RETURNING position', [total]),
      ...rows.flatMap((r) => [
        CompiledQuery.raw(MOVE_SHOP_HEAD, [r.shopId, r.last - r.first + 1]),
        CompiledQuery.raw(APPEND_FEED_ROW, [total - r.last, total - r.first, r.shopId, r.createdUs, r.entries, r.shopId, r.shopId, r.last - r.first]),
      ]),
    ]
  },
}

const HEAD = '(SELECT position FROM feed_head WHERE id = 1)'
const SHOP_HEAD = '(SELECT position FROM feed_shop_head WHERE shop_id = ?)'
const MOVE_SHOP_HEAD =
  'INSERT INTO feed_shop_head (shop_id, position) VALUES (?, ?) ON CONFLICT (shop_id) DO UPDATE SET position = position + excluded.position RETURNING 1'
// One row per shop in a batch: the row's entries end at its shop's new head.
const APPEND_FEED_ROW =
  'INSERT INTO feed (position, first_position, shop_id, created_us, entries, shop_position, shop_first_position) ' +
  `VALUES (${HEAD} - ?, ${HEAD} - ?, ?, ?, ?, ${SHOP_HEAD}, ${SHOP_HEAD} - ?) RETURNING 1`
