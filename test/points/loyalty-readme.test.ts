import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { childEnv } from '../support/cli-process.ts'
import { createTestDatabase, forEachDatabase } from '../support/harness.ts'
import { createKey, killAllServers, ROOT, startServerProcess, stopServerProcess } from '../support/server-process.ts'

// The loyalty program's page (docs/program/loyalty-program.md), as a new operator reads it: every
// example runs as written, in a shell, with BASE set as the quick start sets it, against a fresh
// server, and prints the answers its `# →` lines show (each the part of an answer that matters,
// found in order among what the block printed).

const PAGE = 'docs/program/loyalty-program.md'
const TEXT = readFileSync(join(ROOT, PAGE), 'utf8')

after(() => killAllServers())

interface Example {
  name: string
  script: string
  /** The parts of answers the block must print, in this order. */
  expected: unknown[]
}

function examples(): Example[] {
  assert.ok(TEXT.startsWith('# The loyalty program\n'), `${PAGE} is the page of the loyalty program`)
  const blocks = [...TEXT.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!)
  return blocks
    .filter((b) => b.startsWith('# Example: '))
    .map((script) => ({
      name: script.slice('# Example: '.length, script.indexOf('\n')),
      script,
      expected: [...script.matchAll(/^# → (.*)$/gm)].map((m) => JSON.parse(m[1]!) as unknown),
    }))
}

/** Whether `actual` holds `expected`: its keys with matching values, and an array's items in order (others may come between). */
function holds(actual: unknown, expected: unknown): boolean {
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return false
    let at = 0
    for (const item of expected) {
      while (at < actual.length && !holds(actual[at], item)) at++
      if (at === actual.length) return false
      at++
    }
    return true
  }
  if (typeof expected === 'object' && expected !== null) {
    if (typeof actual !== 'object' || actual === null) return false
    return Object.entries(expected).every(([k, v]) => holds((actual as Record<string, unknown>)[k], v))
  }
  return actual === expected
}

function run(script: string, port: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn('bash', ['-euo', 'pipefail', '-c', script], {
      cwd: ROOT,
      env: childEnv({ DATABASE_URL: databaseUrl, BASE: `http://127.0.0.1:${port}` }),
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c))
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c))
    const guard = setTimeout(() => child.kill('SIGKILL'), 120_000)
    child.on('error', fail)
    child.on('close', (code) => {
      clearTimeout(guard)
      done({ code, stdout, stderr })
    })
  })
}

let databaseUrl = ''

test('the section has an example for each rule of the program, each with what it must answer', () => {
  const names = examples().map((e) => e.name)
  assert.equal(names.length, 4, names.join('; '))
  for (const e of examples()) assert.ok(e.expected.length > 0, `${e.name}: no # → line`)
})

forEachDatabase((kind) => {
  test('every example of "The loyalty program", run as written against a fresh server, answers what the page shows', async () => {
    const database = await createTestDatabase(kind)
    databaseUrl = database.url
    const probe = await createKey(databaseUrl, 'readiness-probe')
    // The sweeper looks every second, so the warning example waits a second, not twenty.
    const server = await startServerProcess(databaseUrl, probe.key, { SWEEP_INTERVAL_SECONDS: '1' })
    try {
      for (const example of examples()) {
        const result = await run(example.script, server.port)
        assert.equal(result.code, 0, `${example.name}: the block failed\n${result.stderr}`)
        const printed = result.stdout
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line) as unknown)
        let at = 0
        for (const want of example.expected) {
          while (at < printed.length && !holds(printed[at], want)) at++
          assert.ok(at < printed.length, `${example.name}: nothing printed holds ${JSON.stringify(want)}\nprinted:\n${result.stdout}`)
          at++
        }
      }
      assert.equal((await stopServerProcess(server)).code, 0)
    } finally {
      await database.drop()
    }
  })
})
