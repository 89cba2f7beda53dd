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

/** The first shell block after `heading` (and after `from` within its section). */
function blockAfter(heading: string, from = ''): string {
  const start = README.indexOf(heading)
  const at = README.indexOf(from, start)
  assert.ok(start >= 0 && at >= start, `the README has ${heading}`)
  const block = /```sh\n([\s\S]*?)```/.exec(README.slice(at))
  assert.ok(block, `a sh block follows ${heading}`)
  return block[1]!
}

/** Runs a shell script as a reader would, in the repository, with `env` its only settings; SIGKILLed after two minutes. */
function runShell(script: string, env: Record<string, string>, cwd = ROOT): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn('bash', ['-euo', 'pipefail', '-c', script], { cwd, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] })
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
    const run = await runShell(script, { DATABASE_URL: databaseUrl })
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

test('the Rewards block, run as written in a shell against a fresh server, claims a generated code and a pool code; the Switching in block imports twice, the second changing nothing', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'shop-intake-readme-'))
  const databaseUrl = `sqlite:${join(dir, 'rewards.db')}`
  try {
    const probe = await createKey(databaseUrl, 'readiness-probe')
    const server = await startServerProcess(databaseUrl, probe.key)
    const port = (script: string) => script.replaceAll('http://127.0.0.1:8080', `http://127.0.0.1:${server.port}`)
    // Run in a folder of its own (the blocks write codes.txt and balances.csv), where `npx shop-intake` is this checkout's.
    const npx = `npx() { if [ "$1" = shop-intake ]; then shift; node ${join(ROOT, 'bin/shop-intake.js')} "$@"; else command npx "$@"; fi; }\ncd ${dir}\n`
    const rewards = await runShell(npx + port(blockAfter('### Rewards: what points buy')), { DATABASE_URL: databaseUrl })
    assert.equal(rewards.code, 0, `the Rewards block failed:\n${rewards.stderr}\n${rewards.stdout}`)
    const claims = [...rewards.stdout.matchAll(/\{"claim_id":[^\n]*?"cancelled_at":null\}/g)].map((m) => JSON.parse(m[0]))
    assert.deepEqual(
      claims.map((c) => [c.customer_id, c.reward_id, c.reward_name, c.points, c.available_after]),
      [
        [9, 1, '5 EUR off', 50, 70],
        [9, 2, 'Free shipping', 30, 40],
      ],
      rewards.stdout,
    )
    assert.match(claims[0].code, /^FIVE-[346789ABCDEFGHJKLMNPQRTUVWXY]{13}$/)
    assert.equal(claims[1].code, 'SHIP-7Q2K')
    assert.match(rewards.stdout, /added 2 codes to reward 2 of shop acme; 0 duplicates left out; 2 codes left/)
    const imports = await runShell(npx + port(blockAfter('### Switching in: importing balances')), { DATABASE_URL: databaseUrl })
    assert.equal(imports.code, 0, `the Switching in block failed:\n${imports.stderr}`)
    const said = imports.stdout.trim().split('\n')
    assert.equal(
      said[0],
      'dry run, nothing written: would import 2 lines of shop acme: 1 new customers, 2 entries (200 points added, 0 taken back), 0 unchanged, 0 skipped (deleted customers); ' +
        '1 expiry dates set or changed, 0 points expired at once (expires_at passed)',
    )
    assert.equal(
      said[1],
      'imported 2 lines of shop acme: 1 new customers, 2 entries (200 points added, 0 taken back), 0 unchanged, 0 skipped (deleted customers); ' +
        '1 expiry dates set or changed, 0 points expired at once (expires_at passed)',
    )
    assert.equal(
      said[2],
      'imported 2 lines of shop acme: 0 new customers, 0 entries (0 points added, 0 taken back), 2 unchanged, 0 skipped (deleted customers); ' +
        '0 expiry dates set or changed, 0 points expired at once (expires_at passed)',
    )
    assert.equal((await stopServerProcess(server)).code, 0)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
