// What Linux's /proc says a process or thread has used: CPU time in clock ticks, bytes written.
// The parsers are pure (test/operations/bench-proc-stats.test.ts); the readers return undefined for a process
// or thread that has gone.
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'

/** The fields of /proc/PID/stat (or /proc/PID/task/TID/stat) the bench reads; times in clock ticks. */
export interface ProcStat {
  comm: string
  ppid: number
  /** User and system time of this process (all its threads, also those that have exited) or of this thread. */
  utime: number
  stime: number
  /** User and system time of its children that have exited and been waited for. */
  cutime: number
  cstime: number
  /** When it started, in ticks after boot. */
  starttime: number
}

/**
 * Parses a stat line: `pid (comm) state ppid …` (proc(5)). The name may hold spaces and
 * parentheses, so the fields are counted from the last `)`.
 */
export function parseStat(text: string): ProcStat {
  const open = text.indexOf('(')
  const close = text.lastIndexOf(')')
  if (open < 0 || close < open) throw new Error(`not a /proc stat line: ${text.slice(0, 80)}`)
  // Field 3 (state) is f[0], so field N is f[N - 3].
  const f = text
    .slice(close + 2)
    .trim()
    .split(/\s+/)
  const n = (field: number) => {
    const value = Number(f[field - 3])
    if (!Number.isFinite(value)) throw new Error(`field ${field} missing from a /proc stat line: ${text.slice(0, 80)}`)
    return value
  }
  return { comm: text.slice(open + 1, close), ppid: n(4), utime: n(14), stime: n(15), cutime: n(16), cstime: n(17), starttime: n(22) }
}

/** The counters of /proc/PID/io, by name (`wchar`, `syscw`, `write_bytes`, …). */
export function parseIo(text: string): Record<string, number> {
  const out: Record<string, number> = {}
  for (const line of text.split('\n')) {
    const m = /^(\w+):\s+(\d+)$/.exec(line.trim())
    if (m) out[m[1]!] = Number(m[2])
  }
  return out
}

let ticks: number | undefined

/** Clock ticks per second (`getconf CLK_TCK`, 100 on Linux almost everywhere). */
export function clockTicks(): number {
  if (ticks === undefined) {
    const out = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' })
    ticks = Number(out.stdout?.trim()) || 100
  }
  return ticks
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return undefined
  }
}

export function procStat(pid: number, tid?: number): ProcStat | undefined {
  const text = read(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`)
  return text === undefined ? undefined : parseStat(text)
}

export function procIo(pid: number): Record<string, number> | undefined {
  const text = read(`/proc/${pid}/io`)
  return text === undefined ? undefined : parseIo(text)
}

export function threadIds(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).map(Number)
  } catch {
    return []
  }
}

/** The process and its descendants (a cluster's workers), from /proc/…/children. */
export function processTree(pid: number): number[] {
  const out = [pid]
  for (let i = 0; i < out.length; i++) {
    for (const tid of threadIds(out[i]!)) {
      const children = read(`/proc/${out[i]}/task/${tid}/children`) ?? ''
      out.push(...children.trim().split(/\s+/).filter(Boolean).map(Number))
    }
  }
  return out
}

/** Every process whose parent is `pid`, found by scanning /proc (for servers that are not ours, such as PostgreSQL's). */
export function childrenByScan(pid: number): number[] {
  const out: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    if (procStat(Number(entry))?.ppid === pid) out.push(Number(entry))
  }
  return out
}

/**
 * Whether a thread, idle now, waits in epoll: a thread that runs an event loop of its own (the
 * main thread, a worker_threads Worker, the V8 platform's delayed-task thread). V8's and libuv's
 * pool threads wait on futexes. On Node before 22 every thread is called "node", so the name
 * cannot tell them apart.
 */
export function waitsInEpoll(pid: number, tid: number): boolean {
  const wchan = read(`/proc/${pid}/task/${tid}/wchan`) ?? ''
  if (wchan.includes('epoll')) return true
  // x86-64: epoll_wait 232, epoll_pwait 281, epoll_pwait2 441 (when wchan is hidden).
  const syscall = (read(`/proc/${pid}/task/${tid}/syscall`) ?? '').split(' ')[0]
  return process.arch === 'x64' && ['232', '281', '441'].includes(syscall ?? '')
}
