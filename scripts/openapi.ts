// Writes the OpenAPI document the service serves at /openapi.json to a file (default
// build/openapi.json), for `redocly lint` and client generators. Builds the real app on a
// throw-away SQLite database, so the document is exactly what the routes declare.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'

const out = process.argv[2] ?? 'build/openapi.json'
const dir = mkdtempSync(join(tmpdir(), 'shop-intake-openapi-'))
try {
  const app = await buildApp(loadConfig({ DATABASE_URL: `sqlite:${join(dir, 'openapi.db')}`, LOG_LEVEL: 'silent' }))
  await app.ready()
  const document = app.swagger()
  await app.close()
  mkdirSync(dirname(out), { recursive: true })
  writeFileSync(out, JSON.stringify(document, null, 2) + '\n')
} finally {
  rmSync(dir, { recursive: true, force: true })
}
