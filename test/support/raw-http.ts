import net from 'node:net'
import type { FastifyInstance } from 'fastify'

// HTTP/1.1 spoken by hand over a TCP socket, for what app.inject cannot send or
// observe: missing or repeated headers, unusual methods, interim 100 responses,
// bodies held back or cut off, and requests that are really concurrent.

export interface RawResponse {
  status: number
  /** Header names in lower case; a repeated header keeps its last value. */
  headers: Record<string, string>
  body: string
}

export interface RawClient {
  socket: net.Socket
  /** Everything the server sent, as latin1 text. */
  text(): string
  /** The complete responses received so far, interim (1xx) ones included. */
  responses(): RawResponse[]
  /** Resolves once `count` complete responses have arrived or the server has closed. */
  responded(count?: number): Promise<RawResponse[]>
  /** Resolves when the server has closed the connection. */
  closed: Promise<void>
  isClosed(): boolean
}

/** Listens on a free port of 127.0.0.1 and returns it. */
export async function listen(app: FastifyInstance): Promise<number> {
  await app.listen({ port: 0, host: '127.0.0.1' })
  return (app.server.address() as net.AddressInfo).port
}

/** Parses the complete responses at the start of `text`; a body is read by Content-Length (none after HEAD). */
export function parseResponses(text: string, head = false): RawResponse[] {
  const out: RawResponse[] = []
  let rest = text
  for (;;) {
    const end = rest.indexOf('\r\n\r\n')
    if (end < 0) return out
    const [statusLine, ...lines] = rest.slice(0, end).split('\r\n')
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine!)
    if (!m) return out
    const headers: Record<string, string> = {}
    for (const line of lines) {
      const colon = line.indexOf(':')
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
    }
    const status = Number(m[1])
    const length = head || status < 200 || status === 204 || status === 304 ? 0 : Number(headers['content-length'] ?? 0)
    if (rest.length < end + 4 + length) return out
    out.push({ status, headers, body: rest.slice(end + 4, end + 4 + length) })
    rest = rest.slice(end + 4 + length)
  }
}

/** A connection; `head` when its requests are HEAD requests, whose answers have no body. */
export function openRaw(port: number, head = false): Promise<RawClient> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1' })
    let received = ''
    let closed = false
    const waiters = new Set<() => void>()
    const wake = () => {
      for (const w of [...waiters]) w()
    }
    const closedPromise = new Promise<void>((r) =>
      socket.on('close', () => {
        closed = true
        r()
        wake()
      }),
    )
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1')
      wake()
    })
    socket.on('error', () => {})
    socket.once('connect', () => {
      const client: RawClient = {
        socket,
        text: () => received,
        responses: () => parseResponses(received, head),
        responded(count = 1) {
          return new Promise((done) => {
            const check = () => {
              const responses = parseResponses(received, head)
              if (responses.length >= count || closed) {
                waiters.delete(check)
                done(responses)
              }
            }
            waiters.add(check)
            check()
          })
        },
        closed: closedPromise,
        isClosed: () => closed,
      }
      resolve(client)
    })
    socket.once('error', reject)
  })
}

/** One request on a new connection; resolves with its final (non-1xx) response. */
export async function rawRequest(port: number, text: string | Buffer): Promise<RawResponse> {
  const request = Buffer.from(text)
  const client = await openRaw(port, request.subarray(0, 5).toString() === 'HEAD ')
  try {
    client.socket.write(request)
    for (let n = 1; ; n++) {
      const responses = await client.responded(n)
      const last = responses[responses.length - 1]
      if (last && last.status >= 200) return last
      if (client.isClosed()) throw new Error(`the server closed the connection without a final response: ${JSON.stringify(client.text().slice(0, 300))}`)
    }
  } finally {
    client.socket.destroy()
  }
}
