import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { describe, test } from 'node:test'
import { writerThread } from '../../bench/costs.ts'
import { metricSum, writePathCounts } from '../../bench/metrics-text.ts'
import { parseIo, parseStat, processTree, procStat, threadIds } from '../../bench/proc-stats.ts'

// What the bench's costs are read from (npm run bench): /proc lines, /metrics text, and the
// rule that finds the SQLite writer thread among a Node process's threads.

describe('bench: /proc and /metrics parsers', () => {
  test('a stat line is read from its last parenthesis, whatever the name holds', () => {
    const line =
      '4242 (node (worker) x) S 4100 4242 4100 0 -1 4194560 53186 0 0 0 1234 567 8 9 20 0 12 0 98765 1268490240 41234 18446744073709551615 1 1 0 0 0 0 0 4096 134234626 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n'
    assert.deepEqual(parseStat(line), { comm: 'node (worker) x', ppid: 4100, utime: 1234, stime: 567, cutime: 8, cstime: 9, starttime: 98765 })
    assert.throws(() => parseStat('no parentheses here'))
    assert.throws(() => parseStat('1 (short) S 0'))
  })

  test('/proc/PID/io by name', () => {
    const io = 'rchar: 1024\nwchar: 2048\nsyscr: 3\nsyscw: 4\nread_bytes: 0\nwrite_bytes: 81920\ncancelled_write_bytes: 4096\n'
    assert.deepEqual(parseIo(io), { rchar: 1024, wchar: 2048, syscr: 3, syscw: 4, read_bytes: 0, write_bytes: 81920, cancelled_write_bytes: 4096 })
  })

  test('a metric is summed over its labels, and only that metric', () => {
    const text = [
      '# HELP shop_intake_db_statements_total Statements',
      '# TYPE shop_intake_db_statements_total counter',
      'shop_intake_db_statements_total{path="batch"} 120',
      'shop_intake_db_statements_total{path="other"} 5',
      'shop_intake_db_round_trips_total{path="batch"} 40',
      'shop_intake_batch_size_bucket{le="1"} 2',
      'shop_intake_batch_size_sum 96',
      'shop_intake_batch_size_count 6',
      'shop_intake_batch_size_count_not_this 1000',
      'shop_intake_write_queue_depth 0',
    ].join('\n')
    assert.equal(metricSum(text, 'shop_intake_db_statements_total'), 125)
    assert.equal(metricSum(text, 'shop_intake_absent_total'), 0)
    assert.deepEqual(writePathCounts(text), { batches: 6, items: 96, statements: 125, roundTrips: 40, queueDepth: 0 })
  })
})

describe("bench: the SQLite writer thread among a Node process's threads", { skip: process.platform !== 'linux' && 'reads /proc' }, () => {
  /** A Node process, with or without a worker_threads Worker, that says when it is ready and then idles. */
  async function node(withWorker: boolean, flags: string[] = []): Promise<ChildProcess> {
    const code = withWorker
      ? // The Worker does some work first, so that it is the busiest thread but the main one.
        "const { Worker } = require('node:worker_threads'); const w = new Worker(\"let x = 0; for (let i = 0; i < 3e8; i++) x ^= i; require('node:worker_threads').parentPort.postMessage(x); setInterval(() => {}, 1000)\", { eval: true }); w.once('message', () => console.log('ready')); setInterval(() => {}, 1000)"
      : "console.log('ready'); setInterval(() => {}, 1000)"
    const child = spawn(process.execPath, [...flags, '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] })
    const [chunk] = (await once(child.stdout!, 'data')) as [Buffer]
    assert.equal(chunk.toString().trim(), 'ready')
    return child
  }

  for (const flags of [[], ['--import', 'tsx']]) {
    test(`the Worker is found, not the V8 platform's own loop thread${flags.length ? ", nor the module loader's of tsx" : ''}`, async () => {
      const child = await node(true, flags)
      try {
        const found = await writerThread(child.pid!)
        const busiest = threadIds(child.pid!)
          .filter((tid) => tid !== child.pid)
          .map((tid) => ({ tid, ticks: procStat(child.pid!, tid)!.utime + procStat(child.pid!, tid)!.stime }))
          .sort((a, b) => b.ticks - a.ticks)[0]!
        assert.equal(found, busiest.tid)
      } finally {
        child.kill()
      }
    })
  }

  test('a process without a Worker has none', async () => {
    const child = await node(false)
    try {
      assert.equal(await writerThread(child.pid!), undefined)
      assert.deepEqual(processTree(child.pid!), [child.pid])
    } finally {
      child.kill()
    }
  })
})
