import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { after, before, test } from 'node:test'
import { besidesDatabase, childEnv, DATABASE_LINE, runCli, type CliRun } from '../support/cli-process.ts'
import { createTestDatabase, forEachDatabase, onDatabase, type TestDatabase } from '../support/harness.ts'

// Which database a command works on, said on stderr by the real CLI (a child process): a command
// run in a second terminal without the service's DATABASE_URL made a key in a new ./data/ file
// that the running service never saw, and said nothing. stdout stays what scripts parse, and a
// PostgreSQL URL's password is never shown.

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const KEY = /^sk_[0-9A-Za-z]{32,}$/
const PASSWORD = 'hunter2-never-shown'

/** The database line of a run: present, first on stderr, once. */
function saidDatabase(run: CliRun, what: string): string {
  const lines = run.stderr.split('\n').filter((l) => DATABASE_LINE.test(l))
  assert.equal(lines.length, 1, `${what}: one database line on stderr, got:\n${run.stderr}`)
  assert.ok(run.stderr.startsWith(lines[0]!), `${what}: the database line comes first on stderr:\n${run.stderr}`)
  assert.doesNotMatch(run.stdout, /database:/, `${what}: stdout is the command's output alone`)
  return lines[0]!.slice('database: '.length)
}

/** `script` in sh, in the package's folder, as the README's commands are run. */
function shell(script: string, env: Record<string, string>): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', script], { cwd: ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c))
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c))
    child.on('error', reject)
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }))
  })
}

forEachDatabase((kind) => {
  let database: TestDatabase
  let url: string
  let env: Record<string, string>

  before(async () => {
    database = await createTestDatabase(kind, { migrated: true })
    // On PostgreSQL, a password in the URL (the tests' server trusts local connections, so any will do).
    if (kind === 'postgres') {
      const withPassword = new URL(database.url)
      withPassword.password = PASSWORD
      url = withPassword.href
    } else url = database.url
    env = { DATABASE_URL: url }
  })
  after(async () => {
    await database.drop()
  })

  test('every command that opens the database says which on stderr, first, and its output stays on stdout', async () => {
    const created = await runCli(['keys', 'create', '--shop', 'said'], env)
    assert.equal(created.code, 0, created.stderr)
    const said = saidDatabase(created, 'keys create')
    const lines = created.stdout.trimEnd().split('\n')
    assert.match(lines.at(-1)!, KEY, `the key alone on stdout's last line: ${created.stdout}`)
    if (kind === 'sqlite') assert.equal(said, url)
    else {
      // The URL with its password hidden, and the schema the tables are in (the URL's search_path here).
      const shown = new URL(url)
      shown.password = 'PASSWORD'
      assert.equal(said, `${shown.href.replace('PASSWORD', '[redacted]')} (schema ${/search_path%3D(\w+)/.exec(url)![1]})`)
    }
    const commands: [string[], RegExp][] = [
      [['migrate'], /the database is up to date/],
      [['keys', 'list', '--shop', 'said'], /^id\s+hint/],
      [['admins', 'list'], /^id\s+name/],
      [['rules', 'show', '--shop', 'said'], /"shop": "said"/],
      [['points', 'report', '--shop', 'said', '--format', 'csv'], /^start,end,earned/],
      [['subscriptions', 'list', '--shop', 'said'], /^id\s+url/],
      [['rewards', 'list', '--shop', 'said'], /^shop said has no rewards$/m],
      [['events', 'prune', '--older-than', '1', '--dry-run'], /would be deleted/],
    ]
    for (const [args, output] of commands) {
      const run = await runCli(args, env)
      const what = args.join(' ')
      assert.equal(run.code, 0, `${what}: ${run.stderr}`)
      assert.equal(saidDatabase(run, what), said, `${what} names the same database`)
      assert.match(run.stdout, output, `${what}: its output on stdout`)
      assert.equal(besidesDatabase(run.stderr), '', `${what}: nothing else on stderr`)
    }
    // A refusal: the database, then the reason in one line.
    const revoked = await runCli(['keys', 'revoke', '99999'], env)
    assert.equal(revoked.code, 1)
    assert.equal(saidDatabase(revoked, 'keys revoke'), said)
    assert.match(besidesDatabase(revoked.stderr), /^shop-intake: no key with id 99999; keys list shows the ids\n$/)
    // backup opens no connection of the service's, and says which database it copies (or refuses to).
    const backup = await runCli(['backup', join(tmpdir(), `shop-intake-said-${process.pid}-${Date.now()}.db`)], env)
    assert.equal(saidDatabase(backup, 'backup'), kind === 'sqlite' ? url : said.replace(/ \(schema \w+\)$/, ''))
    if (kind === 'postgres') assert.match(besidesDatabase(backup.stderr), /for PostgreSQL use pg_dump/)
    else rmSync(backup.stdout.match(/ to (\S+);/)![1]!, { force: true })
  })

  test("the README's `keys create … | tail -n 1` still gives the key alone", async () => {
    const run = await shell('node bin/shop-intake.js keys create --shop piped | tail -n 1', env)
    assert.equal(run.code, 0, run.stderr)
    assert.match(run.stdout, /^sk_[0-9A-Za-z]{32,}\n$/)
    saidDatabase(run, 'keys create | tail -n 1')
  })

  if (kind === 'postgres')
    test('the password of a PostgreSQL URL is never shown, not even when the database cannot be reached', async () => {
      // A port nothing listens on: the connection fails, and the reason names the database without the password.
      const unreachable = new URL(url)
      unreachable.port = '1'
      const run = await runCli(['keys', 'list'], { DATABASE_URL: unreachable.href, DB_TIMEOUT_MS: '2000' })
      assert.equal(run.code, 1)
      assert.match(saidDatabase(run, 'keys list'), /^postgres:\/\/postgres:\[redacted\]@127\.0\.0\.1:1\//)
      assert.ok(!`${run.stdout}${run.stderr}`.includes(PASSWORD), `the password was shown:\n${run.stderr}`)
      assert.ok(!`${run.stdout}${run.stderr}`.includes(encodeURIComponent(PASSWORD)))
      // And a password given as a parameter of the URL.
      const again = await runCli(['keys', 'list'], { DATABASE_URL: `${database.url}&password=${PASSWORD}` })
      assert.equal(again.code, 0, again.stderr)
      assert.match(saidDatabase(again, 'keys list'), /[?&]password=\[redacted\]/)
      assert.ok(!again.stderr.includes(PASSWORD))
    })
})

test('without DATABASE_URL, a command in another folder says it made a new SQLite file there, which no service uses', onDatabase('sqlite'), async () => {
  const folder = realpathSync(mkdtempSync(join(tmpdir(), 'shop-intake-elsewhere-')))
  try {
    const first = await runCli(['keys', 'create', '--shop', 'default'], {}, '', 120_000, folder)
    assert.equal(first.code, 0, first.stderr)
    assert.equal(
      saidDatabase(first, 'keys create'),
      `sqlite:data/shop-intake.db (a new file, ${join(folder, 'data/shop-intake.db')}: no service has used it; a service's database is the DATABASE_URL it runs with)`,
    )
    assert.ok(existsSync(join(folder, 'data/shop-intake.db')))
    assert.match(first.stdout.trimEnd().split('\n').at(-1)!, KEY)
    // The file is there now: the next command names it plainly.
    const second = await runCli(['keys', 'list'], {}, '', 120_000, folder)
    assert.equal(second.code, 0, second.stderr)
    assert.equal(saidDatabase(second, 'keys list'), 'sqlite:data/shop-intake.db')
  } finally {
    rmSync(folder, { recursive: true, force: true })
  }
})
