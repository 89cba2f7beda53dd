import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative, resolve } from 'node:path'
import { after, test } from 'node:test'
import { childEnv } from '../support/cli-process.ts'
import { createKey, killAllServers, ROOT, startServerProcess, stopServerProcess } from '../support/server-process.ts'

// A new user's first minutes: the README's links lead to files shipped with it, and its quick
// start runs as written, one command after the other, in a shell.

const README = readFileSync(join(ROOT, 'README.md'), 'utf8')

after(() => killAllServers())

test('every link of the README to a file points inside the repository, at a file that exists', () => {
  const targets = [...README.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((t) => !/^(https?:|#|mailto:)/.test(t))
  assert.ok(targets.includes('docs/SPEC.md'), 'the README links the spec shipped in docs/')
  for (const target of targets) {
    const path = resolve(ROOT, target.split('#')[0]!)
    assert.ok(!relative(ROOT, path).startsWith('..'), `${target} is outside the repository`)
    assert.ok(existsSync(path), `${target} does not exist`)
  }
})

/** The shell block of the quick start that is run in a second terminal, once the server is up. */
function secondTerminalBlock(): string {
  const start = README.indexOf('## Quick start')
  const from = README.indexOf('In a second', start)
  assert.ok(start >= 0 && from > start, 'the quick start says what to run in a second terminal')
  const block = /```sh\n([\s\S]*?)```/.exec(README.slice(from))
  assert.ok(block, 'a sh block follows')
  return block[1]!
}

test('the quick start, run as written in a shell against a fresh server, creates a key, posts a customer and reads it back', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'shop-intake-readme-'))
  const databaseUrl = `sqlite:${join(dir, 'quick-start.db')}`
  try {
    // The server of the first terminal (`npm start`), on a free port. (The harness knows it is up
    // when a key of its own is accepted: another shop's, so the block creates the shop it names.)
    const probe = await createKey(databaseUrl, 'readiness-probe')
    const server = await startServerProcess(databaseUrl, probe.key)
    const script = secondTerminalBlock().replaceAll('http://127.0.0.1:8080', `http://127.0.0.1:${server.port}`)
    const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((done, fail) => {
      const child = spawn('bash', ['-euo', 'pipefail', '-c', script], {
        cwd: ROOT,
        env: childEnv({ DATABASE_URL: databaseUrl }),
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
    assert.equal(run.code, 0, `the block failed:\n${run.stderr}`)
    // The two curl commands print the webhook's answer, then the customer (with no newline between).
    const answered = /\{"event_id":"[^"]+","status":"(\w+)"\}/.exec(run.stdout)
    assert.equal(answered?.[1], 'applied', run.stdout)
    const customer = JSON.parse(run.stdout.slice(answered!.index + answered![0].length).trim())
    assert.equal(customer.id, 9, run.stdout)
    assert.equal(customer.email, 'ada@example.com')
    assert.equal((await stopServerProcess(server)).code, 0)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
