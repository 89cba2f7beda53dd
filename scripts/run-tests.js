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
// - --profile: the slowest 20 files with their seconds, and the total, at the end.
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
const named = args.filter((a) => a !== '--profile' && a !== '--lint')

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

const files = named.length > 0 ? named : [...testFiles('src'), ...testFiles('test')].sort()
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
  { cwd: ROOT, stdio: ['inherit', 'pipe', 'inherit'] },
)
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
  writeFileSync(TIMES, `${JSON.stringify(times, null, 1)}\n`)
  if (profile) {
    const slowest = [...timed].sort((a, b) => b.seconds - a.seconds).slice(0, 20)
    console.log(`\nThe slowest ${slowest.length} of ${timed.length} test files (${concurrency} at once):`)
    for (const { file, seconds, passed } of slowest) console.log(`${seconds.toFixed(1).padStart(8)} s  ${relative(ROOT, file)}${passed ? '' : '  (failed)'}`)
    const sum = timed.reduce((total, { seconds }) => total + seconds, 0)
    console.log(`${wall.toFixed(1).padStart(8)} s  in all (the files' own times add up to ${sum.toFixed(0)} s)`)
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
