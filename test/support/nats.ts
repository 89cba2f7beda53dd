import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connect } from 'nats'

// A NATS server with JetStream of the test's own, on a free port, with its store in a
// temporary folder, so that a test can stop it and start it again with its stream intact.

export const NATS_SERVER = process.env.NATS_SERVER ?? '/usr/sbin/nats-server'

export interface TestNats {
  url: string
  port: number
  start(): Promise<void>
  /** Stops the server (SIGKILL by default: an outage, not a clean shutdown). */
  stop(signal?: NodeJS.Signals): Promise<void>
  /** Stops it for good and removes its store. */
  dispose(): Promise<void>
  /** SIGSTOP: connections stay open and nothing is answered, until thaw(). */
  freeze(): void
  thaw(): void
  /** Running, thawed and without a stream, as a new server: the next test of a file that shares one starts from it. */
  reset(): Promise<void>
}

const live = new Set<ChildProcess>()
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL')
})

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

/** The port was taken by another process between freePort() and the server's bind. */
class PortTaken extends Error {}

/** Starts attempts again on another free port when the one found was taken meanwhile. */
const PORT_ATTEMPTS = 5

export async function startNats(): Promise<TestNats> {
  const dir = mkdtempSync(join(tmpdir(), 'shop-intake-nats-'))
  for (let attempt = 1; ; attempt++) {
    const nats = natsOn(await freePort(), dir)
    try {
      await nats.start()
      return nats
    } catch (err) {
      // Another suite's server (they pick ports at random) can bind the port found free before
      // this one does: another port then, as nothing has been told this one yet.
      if (err instanceof PortTaken && attempt < PORT_ATTEMPTS) continue
      rmSync(dir, { recursive: true, force: true })
      throw err
    }
  }
}

function natsOn(port: number, dir: string): TestNats {
  let child: ChildProcess | undefined
  let started = false
  const nats: TestNats = {
    url: `nats://127.0.0.1:${port}`,
    port,
    async start() {
      if (child) return
      const again = started
      const c = spawn(NATS_SERVER, ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', dir], { stdio: ['ignore', 'pipe', 'pipe'] })
      child = c
      live.add(c)
      let log = ''
      let timer: NodeJS.Timeout | undefined
      try {
        // Ready is what this server says once it listens: something else that accepts on the port
        // (another suite's server, which took it meanwhile) is not taken for it. The wait wakes on
        // that line, on the process's end ('close' comes after the last of its output, which names
        // the cause of an early exit), or at the bound that only stops a hang.
        await new Promise<void>((resolve, reject) => {
          c.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
            log = (log + chunk).slice(-4000)
            if (log.includes('Server is ready')) resolve()
          })
          const gone = () => {
            live.delete(c)
            if (child === c) child = undefined
          }
          c.once('exit', gone)
          c.once('error', (err) => {
            log += `\n${err.message}`
            gone()
          })
          c.once('close', () => {
            gone()
            if (/address already in use/i.test(log)) {
              reject(
                new PortTaken(
                  again
                    ? `nats-server could not start again on port ${port}, which the test needs it on again: another process took the port while it was stopped\n${log}`
                    : `nats-server could not listen on port ${port}, taken by another process\n${log}`,
                ),
              )
            }
            reject(new Error(`nats-server exited before it was ready on port ${port}:\n${log}`))
          })
          timer = setTimeout(() => {
            c.kill('SIGKILL')
            reject(new Error(`nats-server was not ready on port ${port} within 30 s:\n${log}`))
          }, 30_000)
        })
      } finally {
        clearTimeout(timer)
      }
      started = true
    },
    async stop(signal = 'SIGKILL') {
      const c = child
      if (!c) return
      const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()))
      c.kill(signal)
      await exited
    },
    async dispose() {
      child?.kill('SIGCONT') // (a frozen server takes SIGKILL all the same; this only keeps it tidy)
      await nats.stop()
      rmSync(dir, { recursive: true, force: true })
    },
    freeze: () => void child?.kill('SIGSTOP'),
    thaw: () => void child?.kill('SIGCONT'),
    async reset() {
      child?.kill('SIGCONT')
      await nats.start()
      const nc = await connect({ servers: nats.url })
      try {
        const jsm = await nc.jetstreamManager()
        const names: string[] = []
        for await (const name of jsm.streams.names()) names.push(name)
        for (const name of names) await jsm.streams.delete(name)
      } finally {
        await nc.close()
      }
    },
  }
  return nats
}

export interface StreamMessage {
  seq: number
  subject: string
  msgId: string
  data: Record<string, unknown>
}

/** Every message of `stream` in stream order; [] when the stream does not exist yet. */
export async function readStream(url: string, stream: string): Promise<StreamMessage[]> {
  const nc = await connect({ servers: url })
  try {
    const jsm = await nc.jetstreamManager()
    let info
    try {
      info = await jsm.streams.info(stream)
    } catch {
      return []
    }
    const out: StreamMessage[] = []
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      const m = await jsm.streams.getMessage(stream, { seq })
      out.push({ seq: m.seq, subject: m.subject, msgId: m.header.get('Nats-Msg-Id'), data: m.json<Record<string, unknown>>() })
    }
    return out
  } finally {
    await nc.close()
  }
}

/** How many messages `stream` holds (0 when it does not exist). */
export async function streamCount(url: string, stream: string): Promise<number> {
  const nc = await connect({ servers: url })
  try {
    const jsm = await nc.jetstreamManager()
    return (await jsm.streams.info(stream)).state.messages
  } catch {
    return 0
  } finally {
    await nc.close()
  }
}

export const cleanupDir = (dir: string) => rmSync(dir, { recursive: true, force: true })
