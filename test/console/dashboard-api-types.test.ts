import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { ROOT } from '../support/server-process.ts'

// The console's API types (admin-ui/src/api-types.ts) are generated from the OpenAPI document by
// `npm run openapi:types`: the same two steps here, into a scratch folder, must give the committed
// file byte for byte. A schema changed without regenerating fails here (and the console, typed by
// path from that file, is type-checked against what the service really answers).

const dir = mkdtempSync(join(tmpdir(), 'shop-intake-api-types-'))
after(() => rmSync(dir, { recursive: true, force: true }))

test('admin-ui/src/api-types.ts is what npm run openapi:types makes of the OpenAPI document today', () => {
  const doc = join(dir, 'openapi.json')
  const out = join(dir, 'api-types.ts')
  execFileSync(process.execPath, ['--import', 'tsx', 'scripts/openapi.ts', doc], { cwd: ROOT, stdio: 'pipe' })
  execFileSync(process.execPath, [join(ROOT, 'node_modules', 'openapi-typescript', 'bin', 'cli.js'), doc, '--output', out], { cwd: ROOT, stdio: 'pipe' })
  const committed = readFileSync(join(ROOT, 'admin-ui', 'src', 'api-types.ts'), 'utf8')
  const fresh = readFileSync(out, 'utf8')
  if (committed !== fresh) {
    const a = committed.split('\n')
    const b = fresh.split('\n')
    const line = a.findIndex((l, i) => l !== b[i])
    assert.fail(
      `admin-ui/src/api-types.ts is out of date (first difference at line ${line + 1}: ${JSON.stringify(a[line])} against ${JSON.stringify(b[line])}): run npm run openapi:types`,
    )
  }
})
