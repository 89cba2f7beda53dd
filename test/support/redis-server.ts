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

export async function startRedis(): Promise<RedisServer> {
  const port = await freePort()
  let child: ChildProcess | undefined
  const launch = async () => {
    const c = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
    child = c
    running.add(c)
    c.once('exit', () => running.delete(c))
    const missing = new Promise<never>((_, reject) =>
      c.once('error', (err) =>
        reject(new Error(`redis-server could not be started (${err.message}): the tests need it on the PATH (apt-get install -y redis-server)`)),
      ),
    )
    await Promise.race([answers(port), missing])
  }
  await launch()
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
    start: launch,
    freeze: () => child?.kill('SIGSTOP'),
    thaw: () => child?.kill('SIGCONT'),
  }
}
