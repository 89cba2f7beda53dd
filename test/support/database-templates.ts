import { createHash, randomBytes } from 'node:crypto'
import { execFile } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import Database from 'better-sqlite3'
import pg from 'pg'
import { migrate, openBackend } from '../../src/db/database.ts'

// Migrate once, then copy: an app's fresh database starts as a copy of one migrated by the
// service's own migrations (a file copy on SQLite; on PostgreSQL the schema's dump, replayed
// into the new schema in one statement), not migrated again for every app (a second or more each
// on PostgreSQL). A template is made once per state of src/db/ and src/migrations/ and kept in the temporary
// folder for every later test process. Each copy gets its own deployment id, as a database
// migrated afresh would (migration 0013). Tests of the migrations themselves ask for an empty
// database (createTestDatabase without `migrated`) and run the real ones.

const SCHEMA_SOURCES = ['../../src/db/', '../../src/migrations/'].map((dir) => fileURLToPath(new URL(dir, import.meta.url)))
const FOLDER = join(tmpdir(), 'shop-intake-test-templates')
const SCHEMA_MARK = '__template_schema__'

/** What the migrated schema follows from: every file under src/db/ and src/migrations/ (dialects, column types, migrations). */
function storeDigest(extra: string): string {
  const hash = createHash('sha256').update(extra)
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (!entry.name.endsWith('.test.ts')) hash.update(path).update(readFileSync(path))
    }
  }
  for (const dir of SCHEMA_SOURCES) walk(dir)
  return hash.digest('hex').slice(0, 16)
}

/** A fresh deployment id, in the form of migration 0013's. */
function deploymentId(): string {
  const alphabet = '0123456789abcdefghijklmnopqrstuvwxyz'
  return Array.from(randomBytes(12), (b) => alphabet[b % alphabet.length]).join('')
}

/** Writes `text` to `path` whole or not at all, so that a process reading it never sees half of it. */
function publish(path: string, write: (tmp: string) => void): void {
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}`
  try {
    write(tmp)
    renameSync(tmp, path)
  } finally {
    rmSync(tmp, { force: true })
  }
}

let sqliteTemplate: Promise<string> | undefined

/** The path of a SQLite file the service's migrations made. */
function sqliteTemplateFile(): Promise<string> {
  sqliteTemplate ??= (async () => {
    mkdirSync(FOLDER, { recursive: true })
    const file = join(FOLDER, `${storeDigest('sqlite')}.db`)
    if (existsSync(file)) return file
    const dir = join(FOLDER, `build-${process.pid}-${randomBytes(4).toString('hex')}`)
    mkdirSync(dir)
    try {
      const backend = openBackend(`sqlite:${join(dir, 'template.db')}`)
      await migrate(backend).finally(() => backend.close())
      publish(file, (tmp) => copyFileSync(join(dir, 'template.db'), tmp))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
    return file
  })()
  return sqliteTemplate
}

/** Makes `file` a migrated database with its own deployment id. */
export async function copySqliteTemplate(file: string): Promise<void> {
  copyFileSync(await sqliteTemplateFile(), file)
  const db = new Database(file)
  try {
    db.prepare('UPDATE deployment SET id = ?').run(deploymentId())
  } finally {
    db.close()
  }
}

let postgresTemplate: Promise<string | null> | undefined

/** The migrated schema as SQL that makes it again under SCHEMA_MARK's name; null when pg_dump cannot be run. */
function postgresTemplateSql(serverUrl: string): Promise<string | null> {
  postgresTemplate ??= (async () => {
    mkdirSync(FOLDER, { recursive: true })
    const digest = storeDigest(`postgres ${serverUrl}`)
    const file = join(FOLDER, `${digest}.pg.sql`)
    if (existsSync(file)) return readFileSync(file, 'utf8')
    const schema = `template_${digest}_${process.pid}`
    try {
      const backend = openBackend(serverUrl, { connectTimeoutMs: 5000, queryTimeoutMs: 60_000, schema })
      await migrate(backend).finally(() => backend.close())
      const url = new URL(serverUrl)
      url.search = ''
      const { stdout } = await promisify(execFile)('pg_dump', ['--schema', schema, '--inserts', '--no-owner', '--no-privileges', url.href], {
        maxBuffer: 64 << 20,
      })
      // Lines starting with a backslash are psql's commands (\restrict), not SQL.
      const text = stdout
        .split('\n')
        .filter((line) => !line.startsWith('\\'))
        .join('\n')
        .replaceAll(schema, SCHEMA_MARK)
      publish(file, (tmp) => writeFileSync(tmp, text))
      return text
    } catch {
      return null
    } finally {
      const admin = new pg.Client({ connectionString: serverUrl })
      await admin.connect()
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).finally(() => admin.end())
    }
  })()
  return postgresTemplate
}

/** Makes `schema` (which must not exist) a migrated one with its own deployment id; creates it empty when there is no template. */
export async function createPostgresSchema(serverUrl: string, schema: string, migrated: boolean): Promise<void> {
  const template = migrated ? await postgresTemplateSql(serverUrl) : null
  const admin = new pg.Client({ connectionString: serverUrl })
  await admin.connect()
  try {
    if (template === null) await admin.query(`CREATE SCHEMA ${schema}`)
    else await admin.query(`BEGIN;\n${template.replaceAll(SCHEMA_MARK, schema)};\nUPDATE ${schema}.deployment SET id = '${deploymentId()}';\nCOMMIT`)
  } finally {
    await admin.end()
  }
}
