import http from 'node:http'
import type { AddressInfo } from 'node:net'

// A real HTTP endpoint for outgoing webhooks: it keeps every request it gets, and answers as the
// test says (2xx, an error status, or no answer at all until it is closed).

export interface Received {
  /** When the answer was sent (epoch ms); undefined while none was. */
  answeredAt?: number
  /** The request's path: tests tell their subscriptions apart by it. */
  path: string
  headers: http.IncomingHttpHeaders
  body: string
  at: number
}

/** A status at once, a status after a delay, a status whose body of `bytes` bytes trickles one byte every `everyMs`, or no answer at all. */
export type Answer = number | 'hang' | { status: number; delayMs: number } | { status: number; trickle: { bytes: number; everyMs: number } }

export interface Receiver {
  /** `http://hooks.test:PORT/hooks`: a host name, which the tests' resolver (test/support/resolver.ts) points at the receiver. */
  url: string
  /** The same URL with another host (`localhost` for a server process, which resolves names with the system's resolver; `127.0.0.1`). */
  urlAt(host: string): string
  /** `url` with another path (`/all`): tests tell their subscriptions apart by it. */
  at(path: string): string
  port: number
  received: Received[]
  /** What the next requests get; `received` holds them all either way. */
  answer: (request: Received, index: number) => Answer
  /** Resolves once `predicate` holds over what was received, else rejects after `ms`. */
  until(predicate: (received: Received[]) => boolean, ms?: number, signal?: AbortSignal): Promise<void>
  close(): Promise<void>
}

export async function startReceiver(port = 0): Promise<Receiver> {
  const hanging = new Set<http.ServerResponse>()
  const receiver: Receiver = {
    url: '',
    port: 0,
    urlAt: (host) => `http://${host}:${receiver.port}/hooks`,
    at: (path) => `http://hooks.test:${receiver.port}${path}`,
    received: [],
    answer: () => 204,
    async until(predicate, ms = 20_000, signal) {
      const end = Date.now() + ms
      while (!predicate(receiver.received)) {
        if (signal?.aborted) throw new Error('aborted')
        if (Date.now() > end) throw new Error(`the receiver did not get what was expected within ${ms} ms (${receiver.received.length} requests)`)
        await new Promise((r) => setTimeout(r, 25))
      }
    },
    async close() {
      for (const res of hanging) res.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const got: Received = { path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() }
      const index = receiver.received.push(got) - 1
      const answer = receiver.answer(got, index)
      if (answer === 'hang') {
        hanging.add(res)
        res.on('close', () => hanging.delete(res))
        return
      }
      if (typeof answer === 'number') {
        got.answeredAt = Date.now()
        res.writeHead(answer).end()
      } else if ('trickle' in answer) {
        const { bytes, everyMs } = answer.trickle
        res.writeHead(answer.status, { 'content-length': String(bytes) })
        let sent = 0
        const timer = setInterval(() => {
          res.write('x')
          if (++sent < bytes) return
          clearInterval(timer)
          got.answeredAt = Date.now()
          res.end()
        }, everyMs)
        res.on('close', () => clearInterval(timer))
      } else {
        const timer = setTimeout(() => {
          got.answeredAt = Date.now()
          res.writeHead(answer.status).end()
        }, answer.delayMs)
        res.on('close', () => clearTimeout(timer))
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  receiver.port = (server.address() as AddressInfo).port
  receiver.url = receiver.urlAt('hooks.test')
  return receiver
}
