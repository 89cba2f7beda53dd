import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative, resolve } from 'node:path'
import { after, test } from 'node:test'
import { childEnv } from '../support/cli-process.ts'
import { createKey, killAllServers, ROOT, startServerProcess, stopServerProcess } from '../support/server-process.ts'

// A new user's first minutes: the README is a page a newcomer reads through (at most 200 lines),
// its links lead to files shipped with it, and its quick start runs as written, one command after
// the other, in a shell. The docs' examples that a page says run as written do too. (Every link
// and anchor of the README and docs/ is checked by `npm run lint:docs`.)

const README = readFileSync(join(ROOT, 'README.md'), 'utf8')
const page = (path: string) => readFileSync(join(ROOT, path), 'utf8')

after(() => killAllServers())

test('the README stays a page: at most 200 lines', () => {
  const lines = README.split('\n').length - (README.endsWith('\n') ? 1 : 0)
  assert.ok(lines <= 200, `the README has ${lines} lines; move what is past the door into docs/`)
})

test("the README's doc index links every page of docs/", () => {
  const from = README.indexOf('## The docs')
  const next = README.indexOf('\n## ', from + 1)
  const index = README.slice(from, next < 0 ? undefined : next)
  assert.ok(index.startsWith('## The docs'), 'the README has a section "The docs"')
  const pages = (readdirSync(join(ROOT, 'docs'), { recursive: true }) as string[]).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)
  assert.ok(pages.length > 20, `the docs' pages were found: ${pages.join(', ')}`)
  const missing = pages.filter((path) => !index.includes(`](${path})`) && !index.includes(`](${path}#`))
  assert.deepEqual(missing, [], `pages the README's "The docs" leaves out: ${missing.join(', ')}`)
})

test('every link of the README to a file points inside the repository, at a file that exists', () => {
  const targets = [...README.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((t) => !/^(https?:|#|mailto:)/.test(t))
  assert.ok(targets.includes('docs/SPEC.md'), 'the README links the spec shipped in docs/')
  for (const target of targets) {
    const path = resolve(ROOT, target.split('#')[0]!)
    assert.ok(!relative(ROOT, path).startsWith('..'), `${target} is outside the repository`)
    assert.ok(existsSync(path), `${target} does not exist`)
  }
})

/** The first shell block of `text` after `from`. */
function blockAfter(text: string, from: string, where: string): string {
  const at = text.indexOf(from)
  assert.ok(at >= 0, `${where} has ${from}`)
  const block = /```sh\n([\s\S]*?)```/.exec(text.slice(at))
  assert.ok(block, `a sh block follows ${from} in ${where}`)
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
  return blockAfter(README, 'In a second', 'the README')
}

test('the quick start, run as written in a shell against a fresh server: a customer, an order, their points, a delete, a refusal, then the console and an admin key', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'shop-intake-readme-'))
  const databaseUrl = `sqlite:${join(dir, 'quick-start.db')}`
  try {
    // The server of the first terminal (`npm start`), on a free port, which the block reads from
    // PORT as a reader's would. (The harness knows it is up when a key of its own is accepted:
    // another shop's, so the block creates the shop it names.)
    const probe = await createKey(databaseUrl, 'readiness-probe')
    const server = await startServerProcess(databaseUrl, probe.key)
    const run = await runShell(secondTerminalBlock(), { DATABASE_URL: databaseUrl, PORT: String(server.port) })
    assert.equal(run.code, 0, `the block failed:\n${run.stderr}`)
    const lines = run.stdout.trim().split('\n')
    // The customer, the order and the delete are applied, in this order, and nothing else is.
    const answers = lines.flatMap((l) => (l.startsWith('{"event_id"') ? [JSON.parse(l) as { status: string }] : []))
    assert.deepEqual(
      answers.map((a) => a.status),
      ['applied', 'applied', 'applied'],
      run.stdout,
    )
    // The points: 120.00 EUR, paid, processed long ago: 120 available, earned by order 1001.
    const points = JSON.parse(lines.find((l) => l.includes('"available"'))!) as Record<string, any>
    assert.equal(points.available, 120, run.stdout)
    assert.equal(points.lifetime_earned, 120)
    assert.deepEqual(
      points.entries.map((e: Record<string, unknown>) => [e.order_id, e.reason, e.points]),
      [[1001, 'earned', 120]],
    )
    // The refusal: a 422 problem naming both faults.
    const problem = JSON.parse(lines.find((l) => l.includes('/problems/'))!) as Record<string, any>
    assert.equal(problem.type, '/problems/invalid-body', run.stdout)
    assert.equal(problem.status, 422)
    assert.deepEqual(problem.errors.map((e: { pointer: string }) => e.pointer).sort(), ['/currency', '/total'])
    // The console's address, and an admin key, alone on the last line.
    assert.ok(lines.includes(`console: http://127.0.0.1:${server.port}/admin/`), run.stdout)
    assert.match(lines.at(-1)!, /^ak_[A-Za-z0-9]{32,}$/)
    // What the README shows after each command is what it printed, "…" standing for any text.
    const shown = [...secondTerminalBlock().matchAll(/^# (\{.*\})$/gm)].map((m) => m[1]!)
    const printed = lines.filter((l) => l.startsWith('{'))
    assert.equal(shown.length, printed.length, `the block shows ${shown.length} answers and printed ${printed.length}`)
    shown.forEach((answer, i) => {
      const pattern = new RegExp(
        `^${answer
          .split('…')
          .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
          .join('.*')}$`,
      )
      assert.match(printed[i]!, pattern, `the README shows ${answer}`)
    })
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
    // BASE as the quick start sets it; run in a folder of its own (the blocks write codes.txt and
    // balances.csv), where `node bin/shop-intake.js` is this checkout's.
    const env = { DATABASE_URL: databaseUrl, BASE: `http://127.0.0.1:${server.port}` }
    const cli = `node() { if [ "$1" = bin/shop-intake.js ]; then shift; command node ${join(ROOT, 'bin/shop-intake.js')} "$@"; else command node "$@"; fi; }\ncd ${dir}\n`
    const rewards = await runShell(cli + blockAfter(page('docs/program/rewards.md'), '# Rewards: what points buy', 'docs/program/rewards.md'), env)
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
    const imports = await runShell(cli + blockAfter(page('docs/program/imports.md'), '# Switching in: importing balances', 'docs/program/imports.md'), env)
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
