// A TLS-terminating reverse proxy in front of a server process, as operators run the service
// behind nginx or a load balancer: HTTPS to the client, plain HTTP to the service, the client's
// Host passed on, and X-Forwarded-Proto / X-Forwarded-For / X-Forwarded-Host added. Its
// certificate is self-signed, made at test time by Debian's openssl for 127.0.0.1 and localhost.

import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface Certificate {
  key: string
  cert: string
}

/** A new self-signed certificate for 127.0.0.1 and localhost, valid for a day. */
export function selfSignedCertificate(): Certificate {
  const dir = mkdtempSync(join(tmpdir(), 'shop-intake-tls-'))
  try {
    const run = spawnSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1,DNS:localhost',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { encoding: 'utf8' },
    )
    if (run.status !== 0) throw new Error(`openssl could not make a certificate (Debian's openssl package is needed): ${run.error?.message ?? run.stderr}`)
    return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

export interface TlsProxy {
  port: number
  /** https://127.0.0.1:PORT */
  origin: string
  certificate: Certificate
  /** The service's port; requests before it is set get 502. */
  target: number | undefined
  close(): Promise<void>
}

/**
 * Listens on a free port of 127.0.0.1 and forwards every request to `target` (set it once the
 * service runs, which may need the proxy's origin first). Answers, event streams included, are
 * streamed back as they come.
 */
export async function startTlsProxy(certificate = selfSignedCertificate()): Promise<TlsProxy> {
  const sockets = new Set<import('node:stream').Duplex>()
  const proxy: TlsProxy = { port: 0, origin: '', certificate, target: undefined, close: async () => {} }
  const server = https.createServer({ key: certificate.key, cert: certificate.cert }, (req, res) => {
    if (proxy.target === undefined) {
      res.writeHead(502).end('no target')
      return
    }
    const headers = {
      ...req.headers,
      'x-forwarded-proto': 'https',
      'x-forwarded-for': req.socket.remoteAddress ?? '',
      'x-forwarded-host': req.headers.host ?? '',
    }
    const upstream = http.request({ host: '127.0.0.1', port: proxy.target, method: req.method, path: req.url, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.rawHeaders)
      answer.pipe(res)
    })
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502)
      res.end()
    })
    res.on('close', () => upstream.destroy())
    req.pipe(upstream)
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  proxy.port = (server.address() as AddressInfo).port
  proxy.origin = `https://127.0.0.1:${proxy.port}`
  proxy.close = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy()
      server.close(() => resolve())
    })
  return proxy
}

export interface TlsAnswer {
  status: number
  headers: http.IncomingHttpHeaders
  body: string
}

/** One request through the proxy, trusting only its certificate. */
export function requestThrough(
  proxy: TlsProxy,
  options: { method: string; path: string; headers?: Record<string, string>; body?: string },
): Promise<TlsAnswer> {
  return new Promise<TlsAnswer>((resolve, reject) => {
    const headers: Record<string, string> = { ...options.headers }
    if (options.body !== undefined) headers['content-length'] = String(Buffer.byteLength(options.body))
    const req = https.request(
      { host: '127.0.0.1', port: proxy.port, method: options.method, path: options.path, headers, ca: proxy.certificate.cert, agent: false },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }))
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(options.body)
  })
}
