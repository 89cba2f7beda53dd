import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createConnection, createServer } from 'node:net'
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

const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })

export async function startNats(): Promise<TestNats> {
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'shop-intake-nats-'))
  let child: ChildProcess | undefined
  let log = ''
  const nats: TestNats = {
    url: `nats://127.0.0.1:${port}`,
    port,
    async start() {
      if (child) return
      const c = spawn(NATS_SERVER, ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', dir], { stdio: ['ignore', 'pipe', 'pipe'] })
      child = c
      live.add(c)
      c.stderr!.setEncoding('utf8').on('data', (chunk: string) => (log = (log + chunk).slice(-4000)))
      c.once('exit', () => {
        live.delete(c)
        if (child === c) child = undefined
      })
      const deadline = Date.now() + 20_000
      while (!(await accepts(port))) {
        if (!child || Date.now() > deadline) throw new Error(`nats-server did not start on port ${port}:\n${log}`)
        await new Promise((r) => setTimeout(r, 50))
      }
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
  }
  await nats.start()
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
