#!/usr/bin/env node
// The test step of `npm test` (after the build), and `npm run test:profile`: every
// *.test.ts under src/ and test/ (or the files named), each file in its own process, with
// test/support/loader.js (the sources from the fresh build in dist/, the tests' types stripped by
// @swc/core) and node's spec reporter.
//
// - TEST_CONCURRENCY files at once: by default twice the cores, since a test file spends most of
//   its time waiting (on PostgreSQL, on the SQLite writer thread's fsync, on timers and the
//   processes it starts), not computing.
// - The files that took longest in the last run start first, so that none is left running alone
//   at the end; files never timed go first, largest first (build/test-seconds.json keeps the times;
//   test/support/test-seconds.json, a copy of one run's, orders a clean clone's first run).
// - --lint: `npm run lint` and `npm run lint:openapi` run meanwhile, their output and verdict
//   printed after the tests'; any failure fails the run.
// - --profile: the slowest 20 files with their seconds, and the total, at the end; then the 20
//   that spent the most CPU, with the processes they started. Its times are kept in
//   test/support/test-seconds.json (every file's, those of files it did not run kept as they were;
//   a file that no longer exists dropped), which test/operations/test-seconds.test.ts holds to
//   every test file.
// - --quick (`npm run test:quick`): the unit tests and the HTTP suites that run in the test's own
//   process, on SQLite only (TEST_DATABASES=sqlite unless set): not the files that start processes
//   (servers, commands, Chromium, NATS, Redis, a TLS proxy) nor the property suites over HTTP
//   (quickFile below). The fast loop while changing code; `npm test` runs everything.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const BUILD = join(ROOT, 'build')
const TIMES = join(BUILD, 'test-seconds.json')
const PROFILE_LINES = join(BUILD, `test-profile-${process.pid}.jsonl`)

const args = process.argv.slice(2)
const profile = args.includes('--profile')
const withLint = args.includes('--lint')
const quick = args.includes('--quick')
const named = args.filter((a) => a !== '--profile' && a !== '--lint' && a !== '--quick')

/** `npm run <script>` with its output kept, for --lint: the checks run while the tests wait on their databases. */
function check(script) {
  return new Promise((resolve) => {
    const run = spawn('npm', ['run', '--silent', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    run.stdout.on('data', (chunk) => (output += chunk))
    run.stderr.on('data', (chunk) => (output += chunk))
    run.on('close', (code) => resolve({ script, code, output }))
  })
}
const checks = withLint ? Promise.all(['lint', 'lint:openapi'].map(check)) : Promise.resolve([])

function testFiles(dir) {
  const found = []
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) found.push(...testFiles(path))
    else if (entry.name.endsWith('.test.ts')) found.push(path)
  }
  return found
}

/**
 * Whether --quick runs a file: every unit test beside the sources, and under test/ the suites
 * that neither start processes (the test kits that start servers, commands, Chromium, NATS, Redis
 * or a TLS proxy, or node:child_process itself) nor are property tests over HTTP (fast-check).
 */
const SLOW_IMPORT = /from '(?:\.\.\/support\/(?:browser|server-process|cli-process|nats|redis-server|tls-proxy)\.ts|node:child_process|fast-check)'/
function quickFile(file) {
  return file.startsWith('src/') || !SLOW_IMPORT.test(readFileSync(join(ROOT, file), 'utf8'))
}

const all = [...testFiles('src'), ...testFiles('test')].sort()
const files = named.length > 0 ? named : quick ? all.filter(quickFile) : all
// The last run's times, else those of a run kept with the sources (a clean clone's first run).
const KEPT = join(ROOT, 'test/support/test-seconds.json')
const last = [TIMES, KEPT].filter((file) => existsSync(file)).map((file) => JSON.parse(readFileSync(file, 'utf8')))[0] ?? {}
const size = (file) => statSync(join(ROOT, file)).size
// Longest first; a file with no time yet counts as longer than any, the larger first.
const ordered = [...files].sort((a, b) => (last[b] ?? Infinity) - (last[a] ?? Infinity) || size(b) - size(a) || a.localeCompare(b))

const concurrency = Number(process.env.TEST_CONCURRENCY) || Math.max(2, 2 * availableParallelism())
mkdirSync(BUILD, { recursive: true })
const started = Date.now()
const child = spawn(
  process.execPath,
  [
    '--import',
    './test/support/loader.js',
    '--test',
    `--test-concurrency=${concurrency}`,
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    '--test-reporter=./test/support/profile-reporter.js',
    `--test-reporter-destination=${PROFILE_LINES}`,
    ...ordered,
  ],
  { cwd: ROOT, stdio: ['inherit', 'pipe', 'inherit'], env: quick ? { TEST_DATABASES: 'sqlite', ...process.env } : process.env },
)

// --profile: the CPU each test file spends, its own and its children's (the servers and commands it
// starts), read from /proc twice a second: a test file's process is the runner's child whose
// arguments end with the file; a process's CPU is its own and that of its children it has reaped,
// and a child still running is added to the test file it descends from. A file's last half second
// is not seen; the measure is for finding where the suite's CPU goes, not for accounts.
const cpuOfFile = new Map()
const TICKS = 100 // USER_HZ, as Linux reports CPU times in /proc/<pid>/stat
function sampleCpu() {
  const procs = new Map()
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      const [utime, stime, cutime, cstime] = [11, 12, 13, 14].map((i) => Number(fields[i]))
      procs.set(Number(pid), { ppid: Number(fields[1]), own: utime + stime, reaped: cutime + cstime })
    } catch {
      // gone meanwhile
    }
  }
  const fileOf = new Map()
  for (const [pid, proc] of procs) {
    if (proc.ppid !== child.pid) continue
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean)
      const file = args.at(-1)
      if (file?.endsWith('.test.ts')) fileOf.set(pid, relative(ROOT, file))
    } catch {
      // gone meanwhile
    }
  }
  const total = new Map()
  for (const [pid, proc] of procs) {
    let at = pid
    let steps = 0
    while (at !== undefined && !fileOf.has(at) && steps++ < 32) at = procs.get(at)?.ppid
    const file = fileOf.get(at)
    if (file === undefined) continue
    total.set(file, (total.get(file) ?? 0) + proc.own + (pid === at ? proc.reaped : 0))
  }
  for (const [file, ticks] of total) cpuOfFile.set(file, Math.max(cpuOfFile.get(file) ?? 0, ticks / TICKS))
}
const sampler = profile ? setInterval(sampleCpu, 500) : undefined

// The reporter's summary is kept, to be said again on the last line (after the checks' output).
let tail = ''
child.stdout.on('data', (chunk) => {
  process.stdout.write(chunk)
  tail = (tail + chunk).slice(-4096)
})
/** The spec reporter's count of `name` (tests, pass, fail, skipped...), or null. */
const counted = (name) => {
  const found = [...tail.matchAll(new RegExp(`^\\S* ?${name} (\\d+)$`, 'gm'))].pop()
  return found ? Number(found[1]) : null
}
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal))

child.on('exit', async (code, signal) => {
  clearInterval(sampler)
  const wall = (Date.now() - started) / 1000
  const timed = existsSync(PROFILE_LINES)
    ? readFileSync(PROFILE_LINES, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line))
    : []
  rmSync(PROFILE_LINES, { force: true })
  const times = { ...last }
  for (const { file, seconds } of timed) times[relative(ROOT, file)] = Math.round(seconds * 10) / 10
  // A run on one database, or of part of the files (--quick), is not the whole run's order.
  if (!quick && !process.env.TEST_DATABASES) writeFileSync(TIMES, `${JSON.stringify(times, null, 1)}\n`)
  if (profile && !quick && !process.env.TEST_DATABASES) {
    // The kept times: every existing test file's, in path order, those this run measured and passed updated.
    const kept = existsSync(KEPT) ? JSON.parse(readFileSync(KEPT, 'utf8')) : {}
    for (const { file, seconds, passed } of timed) if (passed) kept[relative(ROOT, file)] = Math.round(seconds * 10) / 10
    const existing = Object.keys(kept)
      .filter((file) => all.includes(file))
      .sort()
    writeFileSync(KEPT, `${JSON.stringify(Object.fromEntries(existing.map((file) => [file, kept[file]])), null, 1)}\n`)
  }
  if (profile) {
    const slowest = [...timed].sort((a, b) => b.seconds - a.seconds).slice(0, 20)
    console.log(`\nThe slowest ${slowest.length} of ${timed.length} test files (${concurrency} at once):`)
    for (const { file, seconds, passed } of slowest) console.log(`${seconds.toFixed(1).padStart(8)} s  ${relative(ROOT, file)}${passed ? '' : '  (failed)'}`)
    const sum = timed.reduce((total, { seconds }) => total + seconds, 0)
    console.log(`${wall.toFixed(1).padStart(8)} s  in all (the files' own times add up to ${sum.toFixed(0)} s)`)
    const cpu = [...cpuOfFile].sort((a, b) => b[1] - a[1])
    console.log(`\nThe 20 test files that spent the most CPU, with the processes they started (of ${cpu.length}):`)
    for (const [file, seconds] of cpu.slice(0, 20)) console.log(`${seconds.toFixed(1).padStart(8)} s  ${file}`)
    console.log(
      `${cpu
        .reduce((total, [, seconds]) => total + seconds, 0)
        .toFixed(0)
        .padStart(8)} s  of CPU in all`,
    )
  }
  let failed = signal !== null || code !== 0
  for (const run of await checks) {
    console.log(`\nnpm run ${run.script}: ${run.code === 0 ? 'passed' : `failed (exit code ${run.code})`}\n${run.output.trimEnd()}`)
    if (run.code !== 0) failed = true
  }
  const [passed, failures, skipped] = ['pass', 'fail', 'skipped'].map(counted)
  if (passed !== null) console.log(`\ntests: ${passed} passed, ${failures ?? 0} failed${skipped ? `, ${skipped} skipped` : ''}`)
  process.exitCode = failed ? 1 : 0
})
