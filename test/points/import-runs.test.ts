import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'node:test'
import { sql } from 'kysely'
import { issueKey } from '../../src/keys/issue-key.ts'
import { findShop } from '../../src/repos/keys-repo.ts'
import { runCli, startCli } from '../support/cli-process.ts'
import { basic, forEachDatabase, type DatabaseKind } from '../support/harness.ts'
import { importSuite } from '../support/import-suite.ts'

// An import is recorded when it starts, moved on per unit and finished at its end (README,
// Switching in): one killed midway, or stopped by a failed unit, is listed unfinished by
// `points import --status`, the admin API and the console, each saying "run the same file again
// to finish", and running the same file again finishes that same record.

const TO_FINISH = 'run the same file again to finish'
const balances = (n: number) =>
  `customer_id,email,points\n${Array.from({ length: n }, (_, i) => `${i + 1},c${i + 1}@example.com,${(i % 90) + 10}`).join('\n')}\n`
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

/** A trigger that fails the insert of one customer, as an outage in the middle of an import would. */
const failInsertOf = (kind: DatabaseKind, id: number) =>
  kind === 'sqlite'
    ? [sql.raw(`CREATE TRIGGER fail_customer BEFORE INSERT ON customers WHEN NEW.id = ${id} BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`)]
    : [
        sql.raw(`CREATE FUNCTION fail_customer() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$ LANGUAGE plpgsql`),
        sql.raw(`CREATE TRIGGER fail_customer BEFORE INSERT ON customers FOR EACH ROW WHEN (NEW.id = ${id}) EXECUTE FUNCTION fail_customer()`),
      ]
const dropFailure = (kind: DatabaseKind) =>
  kind === 'sqlite' ? [sql.raw('DROP TRIGGER fail_customer')] : [sql.raw('DROP TRIGGER fail_customer ON customers'), sql.raw('DROP FUNCTION fail_customer()')]

forEachDatabase((kind) => {
  const s = importSuite(kind, 'import-runs')

  const admin = (method: 'GET' | 'POST', shop: string, csv?: string, query = '') =>
    s.t.app.inject({
      method,
      url: `/v3/admin/shops/${shop}/points/imports${query}`,
      headers: { authorization: basic(s.operator), ...(csv === undefined ? {} : { 'content-type': 'text/csv' }) },
      ...(csv === undefined ? {} : { payload: csv }),
    })
  const unfinished = async (shop: string) => {
    const res = await admin('GET', shop)
    assert.equal(res.statusCode, 200, res.body)
    return res.json().unfinished as {
      id: number
      file_sha256: string
      state: string
      lines_total: number
      lines_done: number
      started_by: string
      to_finish: string | null
      finished_at: string | null
    }[]
  }
  const runsOf = async (shop: string) => {
    const { id } = (await findShop(s.t.app.services.backend.db, shop))!
    return s.t.app.services.backend.db
      .selectFrom('import_runs')
      .select(['id', 'state', 'lines_done', 'lines_total'])
      .where('shop_id', '=', id)
      .orderBy('id')
      .execute()
  }

  test('a CLI import killed midway is listed by --status and the admin API as unfinished; the same file again finishes the same record', async () => {
    const shop = `${kind}-killed`
    const { key } = await issueKey(s.t.app.services.backend.db, shop, Date.now() * 1000)
    const { id: shopId } = (await findShop(s.t.app.services.backend.db, shop))!
    const lines = 40_000
    const csv = balances(lines)
    const file = join(s.dir, `${kind}-killed.csv`)
    writeFileSync(file, csv)
    const env = { DATABASE_URL: s.database.url }

    // Killed (SIGKILL, no chance to tidy up) once its first units are committed and recorded.
    const cli = startCli(['points', 'import', '--shop', shop, '--file', file], env)
    let exited = false
    void cli.done.then(() => (exited = true))
    try {
      for (;;) {
        assert.ok(!exited, `the import ended before it could be killed: ${cli.stderr()}`)
        const row = await s.t.app.services.backend.db.selectFrom('import_runs').select('lines_done').where('shop_id', '=', shopId).executeTakeFirst()
        if (row && row.lines_done >= 1000) break
        await sleep(20)
      }
    } finally {
      cli.child.kill('SIGKILL')
    }
    assert.equal((await cli.done).signal, 'SIGKILL')

    const status = await runCli(['points', 'import', '--status', '--shop', shop], env)
    assert.equal(status.code, 0, status.stderr)
    const shown = status.stdout.match(
      /^unfinished import (\d+) of shop \S+: (\d+) of 40000 lines done, file sha256 ([0-9a-f]{64}), started \S+ by command line \(.+\), last unit \S+: run the same file again to finish\n$/,
    )
    assert.ok(shown, status.stdout)
    const done = Number(shown[2])
    assert.ok(done >= 1000 && done < lines, `${done} lines done`)
    assert.equal(shown[3], sha256(csv))
    assert.equal((await s.t.get(`/v3/customers/${done}`, key)).statusCode, 200, 'the lines done are committed')
    assert.equal((await s.t.get(`/v3/customers/${lines}`, key)).statusCode, 404, 'the last line is not')

    const listed = await unfinished(shop)
    assert.equal(listed.length, 1)
    assert.deepEqual(
      { ...listed[0], started_by: listed[0]!.started_by.startsWith('command line (') },
      {
        ...listed[0],
        id: Number(shown[1]),
        file_sha256: sha256(csv),
        state: 'unfinished',
        lines_total: lines,
        lines_done: done,
        started_by: true,
        finished_at: null,
        to_finish: TO_FINISH,
      },
    )

    const again = await runCli(['points', 'import', '--shop', shop, '--file', file], env)
    assert.equal(again.code, 0, again.stderr)
    assert.match(again.stdout, /^imported 40000 lines of shop \S+: \d+ new customers/)
    assert.equal((await s.t.get(`/v3/customers/${lines}/points`, key)).json().available, ((lines - 1) % 90) + 10)
    const after = await runCli(['points', 'import', '--status', '--shop', shop], env)
    assert.equal(after.stdout, `no unfinished imports of shop ${shop}\n`)
    assert.deepEqual(await unfinished(shop), [])
    assert.deepEqual(await runsOf(shop), [{ id: Number(shown[1]), state: 'finished', lines_done: lines, lines_total: lines }], 'the same record, finished')
  })

  test('an admin import stopped by a failed unit stays unfinished, listed by the admin API; the same file again finishes it; a dry run or a refused file records nothing', async () => {
    const shop = `${kind}-stopped`
    const { key } = await issueKey(s.t.app.services.backend.db, shop, Date.now() * 1000)
    const csv = balances(2500)
    assert.equal((await admin('POST', shop, csv, '?dry_run=true')).statusCode, 200)
    assert.equal((await admin('POST', shop, 'customer_id,email,points\n1,x,1\n')).statusCode, 422)
    assert.deepEqual(await runsOf(shop), [], 'a dry run and a refused file are no import')

    const db = s.t.app.services.backend.db
    for (const statement of failInsertOf(kind, 1500)) await statement.execute(db)
    let stopped
    try {
      stopped = await admin('POST', shop, csv)
    } finally {
      for (const statement of dropFailure(kind)) await statement.execute(db)
    }
    assert.equal(stopped.statusCode, 503, stopped.body)
    assert.equal((await s.t.get('/v3/customers/1000', key)).statusCode, 200, 'the first unit is committed')
    const listed = await unfinished(shop)
    assert.deepEqual(
      listed.map((r) => [r.file_sha256, r.state, r.lines_done, r.lines_total, r.started_by, r.to_finish]),
      [[sha256(csv), 'unfinished', 1000, 2500, 'Importer', TO_FINISH]],
    )
    const finished = await admin('POST', shop, csv)
    assert.equal(finished.statusCode, 200, finished.body)
    assert.equal(finished.json().lines, 2500)
    assert.deepEqual(await unfinished(shop), [])
    assert.deepEqual(await runsOf(shop), [{ id: listed[0]!.id, state: 'finished', lines_done: 2500, lines_total: 2500 }])
    assert.equal((await admin('GET', 'no-such-shop')).statusCode, 404)
  })
})
