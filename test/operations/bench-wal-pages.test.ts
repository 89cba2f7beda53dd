import assert from 'node:assert/strict'
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import Database from 'better-sqlite3'
import { framesSince, isPointerMapPage, pagesByBtree, readWal } from '../../bench/wal-pages.ts'

// The bench's WAL reader (npm run bench, SQLite pages per table and index) against real WAL
// files that SQLite wrote here: its frames, its commits, and where a log ends.

describe('bench: reading a SQLite WAL', () => {
  let dir: string
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'shop-intake-wal-'))
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  /** A database in WAL mode that never checkpoints by itself, with a table and an index. */
  function open(name: string, pragmas: string[] = []): { db: Database.Database; wal: string } {
    const path = join(dir, name)
    const db = new Database(path)
    for (const p of pragmas) db.pragma(p)
    db.pragma('journal_mode = WAL')
    db.pragma('wal_autocheckpoint = 0')
    db.exec('CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, note TEXT)')
    db.exec('CREATE INDEX items_name ON items (name)')
    return { db, wal: `${path}-wal` }
  }

  const insert = (db: Database.Database, from: number, count: number) =>
    db.transaction(() => {
      const st = db.prepare('INSERT INTO items (id, name, note) VALUES (?, ?, ?)')
      for (let i = from; i < from + count; i++) st.run(i, `name-${i}`, 'x'.repeat(200))
    })()

  test('every committed transaction ends in a commit frame that gives the size of the database', () => {
    const { db, wal } = open('commits.db')
    const start = readWal(wal)!
    insert(db, 0, 1)
    insert(db, 1, 500)
    insert(db, 501, 3)
    const read = readWal(wal)!
    assert.equal(read.header.pageSize, db.pragma('page_size', { simple: true }))
    const added = framesSince(start, read)
    assert.equal(added.filter((f) => f.commitSize > 0).length, 3)
    assert.ok(added.at(-1)!.commitSize > 0, 'the last frame read ends a transaction')
    assert.equal(read.frames.at(-1)!.commitSize, db.pragma('page_count', { simple: true }))
    for (const f of read.frames) assert.ok(f.page >= 1 && f.page <= (db.pragma('page_count', { simple: true }) as number))
    db.close()
  })

  test('pages are named by their table or index, with dbstat, in the proportions written', () => {
    const { db, wal } = open('names.db')
    const start = readWal(wal)
    insert(db, 0, 2000)
    const frames = framesSince(start, readWal(wal))
    const owners = new Map<number, string>()
    for (const row of db.prepare('SELECT name, pageno FROM dbstat').all() as { name: string; pageno: number }[]) owners.set(row.pageno, row.name)
    const report = pagesByBtree(frames, owners, { pageSize: 4096, webhooks: 2000, autoVacuum: false })
    const byName = new Map(report.btrees.map((b) => [b.name, b]))
    assert.equal(report.commits, 1)
    assert.equal(report.frames, frames.length)
    // 2,000 rows of 200-odd bytes fill over a hundred table pages, and fewer pages of the index.
    assert.ok(byName.get('items')!.distinct_pages > 100, JSON.stringify(report.btrees))
    assert.ok(byName.get('items_name')!.distinct_pages > 5)
    assert.ok(byName.get('items')!.distinct_pages > byName.get('items_name')!.distinct_pages)
    assert.equal(
      report.btrees.reduce((n, b) => n + b.frames, 0),
      frames.length,
    )
    assert.equal(report.bytes_per_webhook, Math.round((frames.length * 4096) / 2000))
    db.close()
  })

  test('with auto_vacuum, page 2 is the pointer map, not a b-tree', () => {
    const { db, wal } = open('ptrmap.db', ['auto_vacuum = INCREMENTAL'])
    const start = readWal(wal)
    insert(db, 0, 300)
    const frames = framesSince(start, readWal(wal))
    const owners = new Map<number, string>()
    for (const row of db.prepare('SELECT name, pageno FROM dbstat').all() as { name: string; pageno: number }[]) owners.set(row.pageno, row.name)
    assert.ok(!owners.has(2))
    assert.ok(
      frames.some((f) => f.page === 2),
      'new pages are recorded in the pointer map',
    )
    const report = pagesByBtree(frames, owners, { pageSize: 4096, webhooks: 300, autoVacuum: true })
    assert.ok(report.btrees.some((b) => b.name === '(pointer map)'))
    assert.ok(!report.btrees.some((b) => b.name === '(free or unmapped)'), JSON.stringify(report.btrees))
    db.close()
  })

  test('pointer-map pages: page 2, then one every usable size / 5 + 1 pages', () => {
    assert.deepEqual(
      [1, 2, 3, 821, 822, 823, 1642].filter((p) => isPointerMapPage(p, 4096)),
      [2, 822, 1642],
    )
    assert.deepEqual(
      [2, 206, 207, 411, 412].filter((p) => isPointerMapPage(p, 1024)),
      [2, 207, 412],
    )
  })

  test('after a restart of the log, the old frames left in the file are not read, and every frame is new', () => {
    const { db, wal } = open('restart.db')
    insert(db, 0, 1000)
    const before = readWal(wal)!
    assert.ok(before.frames.length > 20)
    db.pragma('wal_checkpoint(RESTART)')
    insert(db, 1000, 1)
    const after = readWal(wal)!
    assert.notEqual(after.header.salt1, before.header.salt1)
    assert.equal(after.frames.filter((f) => f.commitSize > 0).length, 1)
    assert.ok(after.frames.length < before.frames.length, 'the frames of the earlier log are left out')
    assert.deepEqual(framesSince(before, after), after.frames)
    db.close()
  })

  test("while a reader holds its snapshot, a TRUNCATE checkpoint (the service's after erasures) keeps every frame", () => {
    const { db, wal } = open('held.db')
    insert(db, 0, 200)
    // The bench's reader: a snapshot taken before the writes it measures.
    const reader = new Database(join(dir, 'held.db'))
    reader.exec('BEGIN')
    reader.prepare('SELECT count(*) FROM sqlite_schema').get()
    const before = readWal(wal)
    // No busy timeout here: the service waits out its 5 s, then gives up the same way.
    db.pragma('busy_timeout = 0')
    insert(db, 200, 300)
    assert.equal((db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[])[0]!.busy, 1)
    insert(db, 500, 300)
    const frames = framesSince(before, readWal(wal))
    assert.equal(frames.filter((f) => f.commitSize > 0).length, 2)
    reader.exec('COMMIT')
    reader.close()
    assert.equal((db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[])[0]!.busy, 0)
    assert.equal(readWal(wal), undefined, 'released, the log is truncated')
    db.close()
  })

  test('a frame whose checksum does not match ends the log at the last commit before it', () => {
    const { db, wal } = open('torn.db')
    insert(db, 0, 1)
    const first = readWal(wal)!.frames.length
    insert(db, 1, 400)
    const copy = join(dir, 'torn-copy.db-wal')
    copyFileSync(wal, copy)
    const bytes = readFileSync(copy)
    const pageSize = readWal(wal)!.header.pageSize
    // A byte in the page of the transaction's third frame.
    const at = 32 + (first + 2) * (24 + pageSize) + 24 + 100
    bytes[at] = bytes[at]! ^ 0xff
    writeFileSync(copy, bytes)
    assert.equal(readWal(copy)!.frames.length, first)
    db.close()
  })

  test('no WAL, or one shorter than its header, is no log', () => {
    assert.equal(readWal(join(dir, 'missing-wal')), undefined)
    writeFileSync(join(dir, 'short-wal'), Buffer.alloc(10))
    assert.equal(readWal(join(dir, 'short-wal')), undefined)
    assert.deepEqual(framesSince(undefined, undefined), [])
  })
})
