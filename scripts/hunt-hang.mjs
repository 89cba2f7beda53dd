#!/usr/bin/env node
// Hunts a hang: runs the suites that cut, stop or kill the database's connections many times
// over, on PostgreSQL only, under CPU load (a busy-loop child per core), and when a run passes
// its deadline takes what is needed to see where each thread is before it is killed:
//   - each thread's CPU time (/proc/PID/task/TID/stat) twice, a second apart, and what it waits on (wchan);
//   - a CPU profile of the main thread and of every worker thread, over the inspector (--inspect=0):
//     Profiler.start, a few seconds, Profiler.stop (a .cpuprofile each, for Chrome's DevTools);
//   - the JavaScript stack of every thread (Debugger.pause, then resume);
//   - a diagnostic report (--report-on-signal, SIGUSR2): the native stack, the JavaScript stack of the
//     main thread, libuv's handles, and a report of each worker thread.
// Everything goes under a directory it prints first. A run that fails without hanging keeps its log too.
//
//   npm run hunt-hang -- [--runs 100] [--parallel 1] [--deadline 240] [--load 2] [--files a.test.ts,b.test.ts]
//                        [--out DIR] [--env NAME=VALUE ...]
//
// A run is one suite's file run once in a process of its own (node:test in that process, no child:
// the inspector and the report then reach the test's own threads); the files take turns. Run it
// under `nice` on a shared machine; the busy loops inherit the niceness.

import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync, existsSync } from 'node:fs'
import { availableParallelism, loadavg } from 'node:os'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'

/* global WebSocket */

// Node 20 has WebSocket behind a flag (npm run hunt-hang passes it).
if (typeof WebSocket === 'undefined') {
  console.error('hunt-hang: run it as node --experimental-websocket scripts/hunt-hang.mjs (npm run hunt-hang does)')
  process.exit(2)
}

const DEFAULT_FILES = [
  'test/resilience/db-outage.test.ts',
  'test/resilience/statement-timeout.test.ts',
  'test/resilience/read-timeout.test.ts',
  'test/operations/postgres-connections.test.ts',
  'test/security/revoke-notify.test.ts',
]

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '100' },
    parallel: { type: 'string', default: '1' },
    deadline: { type: 'string', default: '240' },
    load: { type: 'string', default: String(availableParallelism()) },
    files: { type: 'string', default: DEFAULT_FILES.join(',') },
    out: { type: 'string' },
    env: { type: 'string', multiple: true, default: [] },
    'profile-seconds': { type: 'string', default: '5' },
  },
})
const runs = Number(values.runs)
const parallel = Number(values.parallel)
const deadlineMs = Number(values.deadline) * 1000
const files = values.files.split(',').filter(Boolean)
const profileMs = Number(values['profile-seconds']) * 1000
const out = resolve(values.out ?? `/tmp/hunt-hang-${new Date().toISOString().replace(/[:.]/g, '-')}`)
mkdirSync(out, { recursive: true })
const extraEnv = Object.fromEntries(values.env.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]))
const env = { ...process.env, TEST_DATABASES: 'postgres', PG_WRITER_THREAD: 'on', ...extraEnv }
console.log(`hunt-hang: ${runs} runs of ${files.join(', ')}; ${parallel} at once, deadline ${deadlineMs / 1000} s, ${values.load} busy loops`)
console.log(`hunt-hang: PG_WRITER_THREAD=${env.PG_WRITER_THREAD}; what a hang leaves goes to ${out}`)

// The CPU load: busy loops that never yield, one per core unless told.
const loaders = Array.from({ length: Number(values.load) }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }))
/** The test processes running, each the leader of its group (its servers and the CLI in it). */
const running = new Set()
const stopLoad = () => {
  loaders.forEach((l) => l.kill('SIGKILL'))
  for (const pid of running) {
    try {
      process.kill(-pid, 'SIGKILL')
    } catch {
      // gone already
    }
  }
}
process.on('exit', stopLoad)
process.on('SIGINT', () => process.exit(130))
process.on('SIGTERM', () => process.exit(143))

const summary = {
  started: new Date().toISOString(),
  env: { PG_WRITER_THREAD: env.PG_WRITER_THREAD, ...extraEnv },
  files,
  deadlineMs,
  load: Number(values.load),
  runs: [],
}
const saveSummary = () => writeFileSync(join(out, 'summary.json'), JSON.stringify(summary, null, 2))

let next = 0
async function worker() {
  while (next < runs) {
    const n = next++
    const file = files[n % files.length]
    const result = await runOnce(n, file)
    summary.runs.push(result)
    saveSummary()
    const tally = ['passed', 'failed', 'hung'].map((k) => `${summary.runs.filter((r) => r.outcome === k).length} ${k}`).join(', ')
    console.log(
      `run ${n + 1}/${runs} ${file}: ${result.outcome} in ${(result.ms / 1000).toFixed(1)} s, load ${result.loadAverage.toFixed(1)}${result.dir ? ` (${result.dir})` : ''} [${tally}]`,
    )
  }
}
await Promise.all(Array.from({ length: parallel }, worker))
summary.ended = new Date().toISOString()
saveSummary()
stopLoad()
const hung = summary.runs.filter((r) => r.outcome === 'hung').length
console.log(`hunt-hang: ${summary.runs.length} runs, ${hung} hung, ${summary.runs.filter((r) => r.outcome === 'failed').length} failed; ${out}/summary.json`)
process.exit(hung > 0 ? 1 : 0)

/** One run of `file` in a process of its own; on its deadline, what it was doing, then SIGKILL. */
async function runOnce(n, file) {
  const dir = join(out, `run-${String(n + 1).padStart(4, '0')}`)
  mkdirSync(dir, { recursive: true })
  const started = Date.now()
  const child = spawn(
    process.execPath,
    [
      '--import',
      './test/support/loader.js',
      '--inspect=127.0.0.1:0',
      '--report-on-signal',
      '--report-signal=SIGUSR2',
      `--report-directory=${dir}`,
      '--test-reporter=spec',
      file,
    ],
    { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  )
  running.add(child.pid)
  let log = ''
  let inspectorUrl
  child.stdout.on('data', (d) => (log += d))
  child.stderr.on('data', (d) => {
    log += d
    inspectorUrl ??= /Debugger listening on (ws:\/\/\S+)/.exec(log)?.[1]
  })
  const exited = new Promise((res) => child.on('exit', (code, signal) => res({ code, signal })))
  const timer = sleep(deadlineMs).then(() => 'deadline')
  const first = await Promise.race([exited, timer])
  let outcome
  let exit
  if (first === 'deadline') {
    outcome = 'hung'
    writeFileSync(join(dir, 'log-at-deadline.txt'), log)
    await capture(child.pid, inspectorUrl, dir).catch((err) => writeFileSync(join(dir, 'capture-error.txt'), String(err?.stack ?? err)))
    try {
      process.kill(-child.pid, 'SIGKILL')
    } catch {
      // gone already
    }
    exit = await exited
  } else {
    exit = first
    outcome = exit.code === 0 ? 'passed' : 'failed'
  }
  // Each test file's own children (servers, the CLI) go with it.
  try {
    process.kill(-child.pid, 'SIGKILL')
  } catch {
    // the group is gone already
  }
  running.delete(child.pid)
  writeFileSync(join(dir, 'log.txt'), log)
  const ms = Date.now() - started
  const kept = outcome !== 'passed'
  if (!kept) spawnSync('rm', ['-rf', dir])
  return { run: n + 1, file, outcome, ms, exit, loadAverage: loadavg()[0], ...(kept ? { dir } : {}) }
}

/** Per-thread CPU ticks and wait channel, the profiles and stacks over the inspector, and a diagnostic report. */
async function capture(pid, inspectorUrl, dir) {
  const threads = () =>
    Object.fromEntries(
      readdirSync(`/proc/${pid}/task`).map((tid) => {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
        let wchan = ''
        try {
          wchan = readFileSync(`/proc/${pid}/task/${tid}/wchan`, 'utf8')
        } catch {
          // gone already
        }
        return [
          tid,
          { name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), state: fields[0], utime: Number(fields[11]), stime: Number(fields[12]), wchan },
        ]
      }),
    )
  const before = threads()
  await sleep(1000)
  const after = threads()
  const cpu = Object.fromEntries(
    Object.entries(after).map(([tid, t]) => [
      tid,
      { ...t, busyTicksLastSecond: t.utime + t.stime - ((before[tid]?.utime ?? 0) + (before[tid]?.stime ?? 0)), main: tid === String(pid) },
    ]),
  )
  writeFileSync(join(dir, 'threads.json'), JSON.stringify(cpu, null, 2))
  // The diagnostic report first (written by the process itself, even when its JavaScript is busy), then the inspector's slower look.
  process.kill(pid, 'SIGUSR2')
  for (let i = 0; i < 50 && !readdirSync(dir).some((f) => f.startsWith('report.')); i++) await sleep(200)
  await sleep(500)
  for (const f of readdirSync(dir).filter((f) => f.startsWith('report.') && f.endsWith('.json'))) renameSync(join(dir, f), join(dir, `diagnostic-${f}`))
  if (inspectorUrl) await inspect(inspectorUrl, dir)
}

/** Over the inspector: a CPU profile of the main thread and of each worker, then each one's JavaScript stack (paused a moment). */
async function inspect(url, dir) {
  const ws = new WebSocket(url)
  await new Promise((res, rej) => {
    ws.onopen = res
    ws.onerror = () => rej(new Error(`no inspector at ${url}`))
  })
  let id = 0
  const waiting = new Map()
  const workerWaiting = new Map()
  const workers = []
  const events = []
  ws.onmessage = (m) => {
    const msg = JSON.parse(m.data)
    if (msg.id !== undefined && waiting.has(msg.id)) {
      waiting.get(msg.id)(msg)
      waiting.delete(msg.id)
    } else if (msg.method === 'NodeWorker.attachedToWorker') workers.push(msg.params)
    else if (msg.method === 'NodeWorker.receivedMessageFromWorker') {
      const inner = JSON.parse(msg.params.message)
      const key = `${msg.params.sessionId}:${inner.id}`
      if (inner.id !== undefined && workerWaiting.has(key)) {
        workerWaiting.get(key)(inner)
        workerWaiting.delete(key)
      } else events.push({ sessionId: msg.params.sessionId, ...inner })
    } else events.push(msg)
  }
  const call = (method, params = {}, ms = 15_000) =>
    Promise.race([
      new Promise((res) => {
        const i = ++id
        waiting.set(i, res)
        ws.send(JSON.stringify({ id: i, method, params }))
      }),
      sleep(ms).then(() => ({ error: `no answer to ${method} in ${ms} ms` })),
    ])
  const callWorker = (sessionId, method, params = {}, ms = 15_000) =>
    Promise.race([
      new Promise((res) => {
        const i = ++id
        workerWaiting.set(`${sessionId}:${i}`, res)
        ws.send(
          JSON.stringify({ id: ++id, method: 'NodeWorker.sendMessageToWorker', params: { sessionId, message: JSON.stringify({ id: i, method, params }) } }),
        )
      }),
      sleep(ms).then(() => ({ error: `no answer to ${method} in ${ms} ms` })),
    ])
  const stackOf = async (send, pausedOf) => {
    await send('Debugger.enable')
    await send('Debugger.pause')
    let paused
    for (let i = 0; i < 50 && !(paused = pausedOf()); i++) await sleep(100)
    await send('Debugger.resume')
    await send('Debugger.disable')
    return paused
      ? paused.params.callFrames.map((f) => `${f.functionName || '(anonymous)'} ${f.url}:${f.location.lineNumber + 1}:${f.location.columnNumber + 1}`)
      : ['(did not pause)']
  }

  await call('NodeWorker.enable', { waitForDebuggerOnStart: false })
  await sleep(500)
  const targets = [{ name: 'main', send: (m, p) => call(m, p), pausedOf: () => events.find((e) => e.method === 'Debugger.paused' && !e.sessionId) }]
  for (const w of workers)
    targets.push({
      name: `worker-${w.workerInfo.workerId}`,
      send: (m, p) => callWorker(w.sessionId, m, p),
      pausedOf: () => events.find((e) => e.method === 'Debugger.paused' && e.sessionId === w.sessionId),
    })
  for (const t of targets) {
    await t.send('Profiler.enable')
    await t.send('Profiler.start')
  }
  await sleep(profileMs)
  for (const t of targets) {
    const r = await t.send('Profiler.stop')
    if (r?.result?.profile) writeFileSync(join(dir, `${t.name}.cpuprofile`), JSON.stringify(r.result.profile))
    else writeFileSync(join(dir, `${t.name}.profile-error.txt`), JSON.stringify(r))
  }
  const stacks = {}
  for (const t of targets) stacks[t.name] = await stackOf(t.send, t.pausedOf)
  writeFileSync(join(dir, 'stacks.json'), JSON.stringify({ workers: workers.map((w) => w.workerInfo), stacks }, null, 2))
  writeFileSync(join(dir, 'top-functions.txt'), targets.map((t) => `${t.name}\n${topOf(join(dir, `${t.name}.cpuprofile`))}`).join('\n'))
  ws.close()
}

/** The ten functions with the most self samples of a profile, as a quick read. */
function topOf(path) {
  if (!existsSync(path)) return '  (no profile)\n'
  const p = JSON.parse(readFileSync(path, 'utf8'))
  const self = new Map()
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  for (const s of p.samples) {
    const f = byId.get(s).callFrame
    const k = `${f.functionName || '(anonymous)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}`
    self.set(k, (self.get(k) ?? 0) + 1)
  }
  return [...self.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 10)
    .map(([k, v]) => `  ${((100 * v) / p.samples.length).toFixed(1)}% ${k}\n`)
    .join('')
}
