import http from 'node:http'
import https from 'node:https'
import type { LookupFunction } from 'node:net'
import { refusalOf } from './endpoint-guard.ts'

// One POST of an outgoing webhook: through the SSRF guard's agent (endpoint-guard.ts), which
// checks each address the connection may use, the URL's own or the lookup's, before connecting
// to it, so a name cannot point elsewhere between the check and the connection; a deadline for
// the whole exchange, and the answer's status, its Retry-After and the start of its body (Klaviyo
// says there why it refused an event); the rest of the body is read and dropped.

/** What came back: the status; with an answer, its Retry-After header and its body's first ANSWER_KEPT bytes. */
export type PostResult = ({ ok: true; status: number } | { ok: false; status: number | null; error: string }) & { retryAfter?: string; answer?: string }

/** Most bytes of an endpoint's answer read (and dropped) before the connection is cut. */
const ANSWER_BYTES = 64 * 1024
/** Bytes of the answer kept for the caller. */
const ANSWER_KEPT = 4096

export function postWebhook(
  url: string,
  headers: Record<string, string>,
  body: string,
  options: {
    timeoutMs: number
    /** The guard's agents (guardedAgents); Klaviyo's, at the operator's KLAVIYO_API_URL, are plain ones. */
    agents: { http: http.Agent; https: https.Agent }
    /** How host names are resolved (the system's resolver, or the tests'); unset, the agent's own. */
    lookup?: LookupFunction
    signal?: AbortSignal
  },
): Promise<PostResult> {
  const target = new URL(url)
  const secure = target.protocol === 'https:'
  const client = secure ? https : http
  const agent = secure ? options.agents.https : options.agents.http
  const lookup = options.lookup
  return new Promise((resolve) => {
    let settled = false
    const done = (result: PostResult) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      // The signal lives as long as the sender: a listener left on it would keep every request ever made.
      options.signal?.removeEventListener('abort', abort)
      resolve(result)
    }
    const request = client.request(
      target,
      {
        method: 'POST',
        // A content type of the caller's (Klaviyo's JSON:API) wins over the webhooks' own.
        headers: { 'content-type': 'application/json', ...headers, 'content-length': String(Buffer.byteLength(body)) },
        ...(lookup ? { lookup } : {}),
        agent,
      },
      (response) => {
        const status = response.statusCode ?? 0
        let read = 0
        const kept: Buffer[] = []
        response.on('data', (chunk: Buffer) => {
          if (read < ANSWER_KEPT) kept.push(chunk.subarray(0, ANSWER_KEPT - read))
          read += chunk.length
          if (read > ANSWER_BYTES) response.destroy()
        })
        const header = response.headers['retry-after']
        const finish = () => {
          const answer = Buffer.concat(kept).toString('utf8')
          const more = { ...(header === undefined ? {} : { retryAfter: header }), ...(answer === '' ? {} : { answer }) }
          done(status >= 200 && status < 300 ? { ok: true, status, ...more } : { ok: false, status, error: `the endpoint answered ${status}`, ...more })
        }
        response.on('end', finish)
        response.on('close', finish)
        response.on('error', finish)
      },
    )
    const timer = setTimeout(() => {
      done({ ok: false, status: null, error: `no answer within ${options.timeoutMs} ms` })
      request.destroy()
    }, options.timeoutMs)
    request.on('error', (err: NodeJS.ErrnoException) => done({ ok: false, status: null, error: describe(err) }))
    // Shutting down: the attempt ends now, as a failure the caller does not store.
    const abort = () => {
      done({ ok: false, status: null, error: 'the service stopped before an answer came' })
      request.destroy()
    }
    if (options.signal?.aborted) abort()
    else options.signal?.addEventListener('abort', abort, { once: true })
    request.end(body)
  })
}

function describe(err: NodeJS.ErrnoException): string {
  if (err.code === 'ECONNREFUSED') return 'the connection was refused'
  if (err.code === 'ECONNRESET') return 'the connection was reset'
  if (err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN') return 'the host does not resolve'
  const refused = refusalOf(err)
  if (refused) return refused
  return err.code ? `${err.code}: ${err.message}` : err.message
}
