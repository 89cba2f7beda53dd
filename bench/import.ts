// npm run bench:import [-- --lines 1000000 --only sqlite,postgres]
//
// Switching in (docs/program/imports.md): `shop-intake points import` of a CSV of `lines` balances
// (customer_id, email, points), every customer new, timed from the command's start to its exit,
// as the operator runs it: reading and checking the file, then the units of work. Then the same
// file again, which changes nothing (every line unchanged). The promise: a million lines in under
// a minute on the 2-core machine. Besides the wall time it prints the command's own CPU time
// (user and system, by /usr/bin/time): on a machine others share, the wall time is theirs too.

import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs, promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { issueKey } from '../src/keys/issue-key.ts'
import { migrate, openBackend } from '../src/db/database.ts'
import { createTestDatabase } from '../test/support/harness.ts'

const { values: args } = parseArgs({
  options: {
    lines: { type: 'string', default: '1000000' },
    only: { type: 'string', default: 'sqlite,postgres' },
  },
})
const LINES = Number(args.lines)
const CLI = fileURLToPath(new URL('../bin/shop-intake.js', import.meta.url))
const run = promisify(execFile)

const dir = mkdtempSync(join(tmpdir(), 'bench-import-'))
const file = join(dir, 'balances.csv')
const rows = ['customer_id,email,points']
for (let i = 1; i <= LINES; i++) rows.push(`${i},customer${i}@example.com,${(i * 37) % 5000}`)
writeFileSync(file, `${rows.join('\n')}\n`)
console.log(`${LINES.toLocaleString('en')} lines, ${(Buffer.byteLength(rows.join('\n')) / 1e6).toFixed(1)} MB`)

try {
  for (const kind of args.only.split(',') as ('sqlite' | 'postgres')[]) {
    const database = await createTestDatabase(kind)
    try {
      const backend = openBackend(database.url)
      await migrate(backend)
      await issueKey(backend.db, 'bench-import', Date.now() * 1000)
      await backend.close()
      for (const pass of ['first import', 'the same file again']) {
        const start = performance.now()
        const { stdout, stderr } = await run(
          '/usr/bin/time',
          ['-f', 'cpu %U %S', process.execPath, CLI, 'points', 'import', '--shop', 'bench-import', '--file', file],
          {
            env: { ...process.env, DATABASE_URL: database.url, LOG_LEVEL: 'silent' },
            maxBuffer: 64 * 1024 * 1024,
          },
        )
        const seconds = (performance.now() - start) / 1000
        const [user, system] = (/cpu ([\d.]+) ([\d.]+)\s*$/.exec(stderr)?.slice(1) ?? ['0', '0']).map(Number) as [number, number]
        console.log(
          `${kind}: ${pass}: ${seconds.toFixed(1)} s (${Math.round(LINES / seconds).toLocaleString('en')} lines/s), ` +
            `the command's CPU ${(user + system).toFixed(1)} s (${user.toFixed(1)} user, ${system.toFixed(1)} system): ${stdout.trim()}`,
        )
      }
    } finally {
      await database.drop()
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
