import { spawn, type ChildProcess } from 'node:child_process'
import { createConnection, createServer } from 'node:net'

// A Redis server of the test's own, on a free port, that a test can stop (or freeze) and start
// again on the same port: no persistence, nothing shared with other suites.

export interface RedisServer {
  port: number
  url: string
  /** Stops it (SIGTERM) and waits for it to exit. */
  stop(): Promise<void>
  /** Starts it again on the same port, empty, and waits until it answers. */
  start(): Promise<void>
  /** SIGSTOP: the connection stays up, nothing is answered. */
  freeze(): void
  /** SIGCONT. */
  thaw(): void
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolve(port))
    })
  })
}

/** Resolves once a PING on `port` gets PONG; rejects after `limitMs`. */
async function answers(port: number, limitMs = 10_000): Promise<void> {
  const deadline = Date.now() + limitMs
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ port, host: '127.0.0.1' })
      let reply = ''
      socket.setTimeout(500, () => (socket.destroy(), resolve(false)))
      socket.on('error', () => resolve(false))
      socket.on('connect', () => socket.write('PING\r\n'))
      socket.on('data', (chunk) => {
        reply += chunk.toString()
        if (reply.includes('\r\n')) {
          socket.destroy()
          resolve(reply.startsWith('+PONG'))
        }
      })
    })
    if (ok) return
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer within ${limitMs} ms`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

const running = new Set<ChildProcess>()
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL')
})

/** The port was taken by another process between freePort() and the server's bind. */
class PortTaken extends Error {}

/** Starts attempts again on another free port when the one found was taken meanwhile. */
const PORT_ATTEMPTS = 5

/**
 * Starts redis-server on `port` and waits until it answers, as the process started: something
 * else that answers on the port (another suite's server, which took it meanwhile) is not taken
 * for it. `again`: a restart, which must have this port.
 */
async function launch(port: number, again: boolean): Promise<ChildProcess> {
  const c = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  running.add(c)
  let log = ''
  let timer: NodeJS.Timeout | undefined
  // Ready once it says so: the wait wakes on that line (or on the process's end, below), with a
  // bound that only stops a hang.
  const ready = new Promise<void>((resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`redis-server was not ready on port ${port} within 30 s:\n${log}`)), 30_000)
    const keep = (chunk: string) => {
      log = (log + chunk).slice(-4000)
      if (/Ready to accept connections/.test(log)) resolve()
    }
    c.stdout!.setEncoding('utf8').on('data', keep)
    c.stderr!.setEncoding('utf8').on('data', keep)
  })
  // 'close' comes after the last of its output, which names the cause of an early exit.
  const ended = new Promise<never>((_, reject) => {
    c.once('error', (err) =>
      reject(new Error(`redis-server could not be started (${err.message}): the tests need it on the PATH (apt-get install -y redis-server)`)),
    )
    c.once('close', () => {
      running.delete(c)
      if (!/Address already in use/i.test(log)) return reject(new Error(`redis-server exited before it answered on port ${port}:\n${log}`))
      reject(
        new PortTaken(
          again
            ? `redis-server could not start again on port ${port}, which the test needs it on again: another process took the port while it was stopped\n${log}`
            : `redis-server could not listen on port ${port}, taken by another process\n${log}`,
        ),
      )
    })
  })
  ended.catch(() => {}) // (only raced below; once started, its later exit is no failure here)
  const listening = ready.then(() => answers(port)).finally(() => clearTimeout(timer))
  listening.catch(() => {}) // (raced below)
  try {
    await Promise.race([listening, ended])
  } catch (err) {
    clearTimeout(timer)
    c.kill('SIGKILL')
    throw err
  }
  return c
}

export async function startRedis(): Promise<RedisServer> {
  let port = 0
  let child: ChildProcess | undefined
  for (let attempt = 1; !child; attempt++) {
    port = await freePort()
    try {
      child = await launch(port, false)
    } catch (err) {
      // Another suite's server (they pick ports at random) can bind the port found free before
      // this one does: another port then, as nothing has been told this one yet.
      if (!(err instanceof PortTaken) || attempt >= PORT_ATTEMPTS) throw err
    }
  }
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      const c = child
      if (!c || c.exitCode !== null || c.signalCode !== null) return
      const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()))
      c.kill('SIGCONT')
      c.kill('SIGTERM')
      await exited
    },
    async start() {
      child = await launch(port, true)
    },
    freeze: () => child?.kill('SIGSTOP'),
    thaw: () => child?.kill('SIGCONT'),
  }
}
