import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe } from 'node:test'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import pg from 'pg'
import { buildApp, type BuildOptions } from '../../src/app.ts'
import { loadConfig, type Config } from '../../src/config.ts'
import { issueKey } from '../../src/keys/issue-key.ts'
import { installContractCheck } from './contract.ts'
import { copySqliteTemplate, createPostgresSchema } from './database-templates.ts'
import { testNames, type TestNames } from './resolver.ts'

// Every HTTP suite runs once per database: a fresh SQLite file, or a fresh
// PostgreSQL schema, per app, copied from one migrated once (database-templates.ts). TEST_POSTGRES_URL names the server; TEST_DATABASES (sqlite,
// postgres, or both separated by a comma; both when unset) the databases the suites run on.

const ALL_DATABASES = ['sqlite', 'postgres'] as const
export type DatabaseKind = (typeof ALL_DATABASES)[number]

function selectedDatabases(setting: string | undefined): readonly DatabaseKind[] {
  if (setting === undefined || setting.trim() === '') return ALL_DATABASES
  const names = setting.split(',').map((name) => name.trim())
  for (const name of names) {
    if (!(ALL_DATABASES as readonly string[]).includes(name)) throw new Error(`TEST_DATABASES: ${name} is not sqlite or postgres`)
  }
  return ALL_DATABASES.filter((kind) => names.includes(kind))
}

/** The databases the suites run on (TEST_DATABASES). */
export const DATABASES = selectedDatabases(process.env.TEST_DATABASES)

/** The options of a suite or test that runs on one database only: skipped when TEST_DATABASES leaves that one out. */
export function onDatabase(kind: DatabaseKind): { skip?: string } {
  return DATABASES.includes(kind) ? {} : { skip: `TEST_DATABASES=${process.env.TEST_DATABASES} leaves out ${kind}` }
}
export const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

export const HOOK = '/v3/hook/radix/vanilla'
export const CUSTOMER_CREATED = `${HOOK}/customer/hook_created`
export const CUSTOMER_DELETED = `${HOOK}/customer/hook_deleted`
export const ORDER_CREATED = `${HOOK}/order/hook_created`

export function forEachDatabase(suite: (kind: DatabaseKind) => void): void {
  for (const kind of DATABASES) describe(kind, () => suite(kind))
}

export function basic(key: string): string {
  return `Basic ${Buffer.from(`:${key}`).toString('base64')}`
}

export interface TestDatabase {
  url: string
  drop(): Promise<void>
}

/**
 * A new database: a temporary SQLite file, or a new PostgreSQL schema; empty, or with `migrated`
 * already migrated to the latest (a copy of a template the migrations made: database-templates.ts).
 */
export async function createTestDatabase(kind: DatabaseKind, { migrated = false }: { migrated?: boolean } = {}): Promise<TestDatabase> {
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'shop-intake-test-'))
    const file = join(dir, 'test.db')
    if (migrated) await copySqliteTemplate(file)
    return { url: `sqlite:${file}`, drop: async () => rmSync(dir, { recursive: true, force: true }) }
  }
  const schema = `t_${process.pid}_${Math.random().toString(36).slice(2, 10)}`
  await createPostgresSchema(POSTGRES_URL, schema, migrated)
  const url = `${POSTGRES_URL}${POSTGRES_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`
  return {
    url,
    async drop() {
      const c = new pg.Client({ connectionString: POSTGRES_URL })
      await c.connect()
      await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await c.end()
    },
  }
}

export interface TestApp {
  app: FastifyInstance
  config: Config
  database: TestDatabase
  /** The names outgoing webhooks resolve (BuildOptions.resolveHost), unless the test gave its own resolver. */
  names: TestNames
  /** A key of the shop "test". */
  key: string
  shopId: number
  post(path: string, body: unknown, options?: { key?: string; headers?: Record<string, string> }): Promise<LightMyRequestResponse>
  get(url: string, key?: string): Promise<LightMyRequestResponse>
  newKey(shop: string): Promise<string>
  close(): Promise<void>
}

/** The real app, built as production builds it, on a fresh database of `kind` (migrated from a template, unless the test gives its own). */
export async function startTestApp(
  kind: DatabaseKind,
  overrides: Record<string, string> = {},
  options: BuildOptions & { database?: TestDatabase } = {},
): Promise<TestApp> {
  const database = options.database ?? (await createTestDatabase(kind, { migrated: true }))
  // In-process tests outpace any real sender; suites that test the rate limit set it. The shared,
  // loaded PostgreSQL can stall a commit past the default DB_TIMEOUT_MS (1500 ms), which would be
  // a 503 where a test expects 200: suites that test the timeout set their own.
  // PG_WRITER_THREAD from the environment (npm run hunt-hang sets it), unless the test sets its own.
  const fromEnv = process.env.PG_WRITER_THREAD ? { PG_WRITER_THREAD: process.env.PG_WRITER_THREAD } : {}
  const config = loadConfig({ LOG_LEVEL: 'silent', RATE_LIMIT_RPS: '0', DB_TIMEOUT_MS: '10000', ...fromEnv, ...overrides, DATABASE_URL: database.url })
  const names = testNames()
  const app = await buildApp(config, { resolveHost: names.resolve, ...options }).catch(async (err) => {
    if (!options.database) await database.drop()
    throw err
  })
  // Every answer is held to the OpenAPI document (test/support/contract.ts). An answer to
  // app.inject fails the call that got it; any other (over a socket) fails close().
  const violations: string[] = []
  installContractCheck(app, violations)
  const failOnViolations = () => {
    if (violations.length === 0) return
    const found = violations.splice(0)
    throw new Error(`answers that break the OpenAPI document:\n${found.join('\n')}`)
  }
  const inject = app.inject.bind(app) as (...args: unknown[]) => unknown
  app.inject = ((...args: unknown[]) => {
    const result = inject(...args)
    if (args.length !== 1 || !(result instanceof Promise)) return result
    return result.then((res) => {
      failOnViolations()
      return res
    })
  }) as typeof app.inject
  const issued = await issueKey(app.services.backend.db, 'test', Date.now() * 1000)
  const t: TestApp = {
    app,
    config,
    database,
    names,
    key: issued.key,
    shopId: issued.shopId,
    post(path, body, { key = issued.key, headers = {} } = {}) {
      return app.inject({
        method: 'POST',
        url: path,
        headers: { authorization: basic(key), 'content-type': 'application/json', ...headers },
        payload: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body),
      })
    },
    get(url, key = issued.key) {
      return app.inject({ method: 'GET', url, headers: { authorization: basic(key) } })
    },
    async newKey(shop) {
      return (await issueKey(app.services.backend.db, shop, Date.now() * 1000)).key
    },
    async close() {
      await app.close()
      if (!options.database) await database.drop()
      failOnViolations()
    },
  }
  return t
}
