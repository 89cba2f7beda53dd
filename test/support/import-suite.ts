import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { newOperator } from './admin.ts'
import { basic, createTestDatabase, startTestApp, type DatabaseKind, type TestApp, type TestDatabase } from './harness.ts'

/** What a suite of points imports works with: read its fields in tests (they are set before the first). */
export interface ImportSuite {
  database: TestDatabase
  t: TestApp
  /** An operator's admin key. */
  operator: string
  /** A folder for the suite's CSV files, removed after it. */
  dir: string
  /** POST a CSV to the shop's points imports as the operator (`query` such as `?dry_run=true`). */
  importCsv(shop: string, csv: string, query?: string): Promise<LightMyRequestResponse>
}

/**
 * The set-up the suites of points imports share: an app on its own database (kept, so that the
 * command line can import into it too), an operator, and a folder for files; made before the
 * suite's tests, removed after them.
 */
export function importSuite(kind: DatabaseKind, name: string): ImportSuite {
  const suite = {
    importCsv: (shop: string, csv: string, query = '') =>
      suite.t.app.inject({
        method: 'POST',
        url: `/v3/admin/shops/${shop}/points/imports${query}`,
        headers: { authorization: basic(suite.operator), 'content-type': 'text/csv' },
        payload: csv,
      }),
  } as ImportSuite
  before(async () => {
    suite.database = await createTestDatabase(kind)
    suite.t = await startTestApp(kind, {}, { database: suite.database })
    suite.operator = (await newOperator(suite.t, 'Importer')).key
    suite.dir = mkdtempSync(join(tmpdir(), `${name}-`))
  })
  after(async () => {
    await suite.t.close()
    await suite.database.drop()
    rmSync(suite.dir, { recursive: true, force: true })
  })
  return suite
}
