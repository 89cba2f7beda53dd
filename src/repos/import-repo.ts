import type { Kysely } from 'kysely'
import type { StoredIdentity } from '../batch/import-identity.ts'
import type { Backend } from '../db/dialect.ts'
import type { ImportRunsTable, Tables } from '../db/tables.ts'

// A points import's reads and bookkeeping (docs/program/imports.md): the stored customers its lines
// name, by id and by e-mail, for the check of ids against e-mails (src/batch/import-identity.ts),
// and its row in import_runs from start to finish (migration 0030).

/** Ids or e-mails per query: one parameter each (DialectTypes.anyOf), so one prepared statement. */
const CHUNK = 5000

/** The shop's customers (deleted ones too) whose id, or lower-cased e-mail, is among these. */
export async function storedIdentities(
  backend: Backend,
  shopId: number,
  by: 'id' | 'email_lower',
  values: readonly (string | number)[],
): Promise<StoredIdentity[]> {
  const found: StoredIdentity[] = []
  for (let i = 0; i < values.length; i += CHUNK) {
    const rows = await backend.db
      .selectFrom('customers')
      .select(['id', 'email_lower', 'deleted'])
      .where(backend.types.anyOf(by, values.slice(i, i + CHUNK)))
      .where('shop_id', '=', shopId)
      .execute()
    for (const r of rows) found.push({ id: r.id, emailLower: r.email_lower, deleted: r.deleted === 1 })
  }
  return found
}

export type ImportRun = Omit<ImportRunsTable, 'id'> & { id: number }

/**
 * The row of an import of this file into the shop, as it starts: the file's unfinished row when
 * an earlier run of it stopped midway (running it again finishes that one), else a new one.
 */
export async function startImportRun(
  db: Kysely<Tables>,
  run: { shopId: number; fileSha256: string; linesTotal: number; startedBy: string; atUs: number },
): Promise<ImportRun> {
  const open = await db
    .selectFrom('import_runs')
    .selectAll()
    .where('file_sha256', '=', run.fileSha256)
    .where('shop_id', '=', run.shopId)
    .where('state', '=', 'unfinished')
    .orderBy('id', 'desc')
    .executeTakeFirst()
  if (open) {
    await db.updateTable('import_runs').set({ updated_us: run.atUs }).where('id', '=', open.id).execute()
    return { ...open, updated_us: run.atUs }
  }
  const row = {
    shop_id: run.shopId,
    file_sha256: run.fileSha256,
    state: 'unfinished' as const,
    lines_total: run.linesTotal,
    lines_done: 0,
    started_by: run.startedBy,
    started_us: run.atUs,
    updated_us: run.atUs,
    finished_us: null,
  }
  const { id } = await db.insertInto('import_runs').values(row).returning('id').executeTakeFirstOrThrow()
  return { id, ...row }
}

/** The lines of the run's file committed so far, in the file's order. */
export async function progressImportRun(db: Kysely<Tables>, id: number, linesDone: number, atUs: number): Promise<void> {
  await db.updateTable('import_runs').set({ lines_done: linesDone, updated_us: atUs }).where('id', '=', id).execute()
}

/** Every line committed: the import is finished. */
export async function finishImportRun(db: Kysely<Tables>, id: number, linesDone: number, atUs: number): Promise<void> {
  await db.updateTable('import_runs').set({ state: 'finished', lines_done: linesDone, updated_us: atUs, finished_us: atUs }).where('id', '=', id).execute()
}

/** The shop's imports not finished: stopped midway (or still running), oldest first. */
export function unfinishedImportRuns(db: Kysely<Tables>, shopId: number): Promise<ImportRun[]> {
  return db.selectFrom('import_runs').selectAll().where('state', '=', 'unfinished').where('shop_id', '=', shopId).orderBy('id').execute()
}
