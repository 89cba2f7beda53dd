import type { Clock } from '../clock.ts'
import { randomUUID } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import { Command, InvalidArgumentError, Option } from 'commander'

// The sender's side of the contract, for shop developers testing an integration: posts one body
// and retries exactly what docs/guarantees.md say to retry (503 and 429 after Retry-After,
// 408 and connection errors with backoff), with one Idempotency-Key for every attempt, so that a
// retry of something stored is answered `duplicate`, never applied twice.

const TOPICS = ['customer/hook_created', 'customer/hook_deleted', 'order/hook_created'] as const
const RETRIED = new Set([408, 429, 503])

function attempts(value: string): number {
  if (!/^\d{1,2}$/.test(value) || Number(value) < 1 || Number(value) > 20) throw new InvalidArgumentError('a whole number from 1 to 20')
  return Number(value)
}

async function readBody(file: string): Promise<Buffer> {
  if (file !== '-') return readFile(file)
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

/** Retry-After in seconds (the service sends seconds; an HTTP date is honoured too), at most `cap`. */
function retryAfterMs(header: string | null, capMs: number, nowMs: number): number | undefined {
  if (header === null) return undefined
  const seconds = /^\d+$/.test(header.trim()) ? Number(header.trim()) : (Date.parse(header) - nowMs) / 1000
  return Number.isFinite(seconds) ? Math.min(Math.max(seconds, 0) * 1000, capMs) : undefined
}

export function sendCommand(clock: Clock): Command {
  return new Command('send')
    .description(
      'post one webhook body (FILE, or - for stdin) to SHOP_INTAKE_URL with the key in SHOP_INTAKE_KEY, retrying 503, 429, 408 and connection errors as the README says, and print the answer',
    )
    .argument('<file>', 'the JSON body, or - to read it from stdin')
    .addOption(new Option('--topic <topic>', 'the webhook topic').choices(TOPICS).makeOptionMandatory())
    .option('--attempts <n>', 'most attempts in all, 1 to 20', attempts, 6)
    .option('--idempotency-key <key>', 'the Idempotency-Key of every attempt (default: a new UUID)')
    .action(async (file: string, options: { topic: string; attempts: number; idempotencyKey?: string }) => {
      const key = process.env.SHOP_INTAKE_KEY
      if (!key) throw new Error('SHOP_INTAKE_KEY must hold the API key to send with (keys create prints one)')
      const base = (process.env.SHOP_INTAKE_URL || 'http://127.0.0.1:8080').replace(/\/+$/, '')
      if (!/^https?:\/\/[^/]+/.test(base)) throw new Error(`SHOP_INTAKE_URL must be an http:// or https:// URL, not "${base}"`)
      const idempotencyKey = options.idempotencyKey ?? randomUUID()
      if (idempotencyKey.length > 255) throw new Error('--idempotency-key is at most 255 characters')
      const body = await readBody(file)
      const url = `${base}/v3/hook/radix/vanilla/${options.topic}`
      const headers = {
        authorization: `Basic ${Buffer.from(`:${key}`).toString('base64')}`,
        'content-type': 'application/json',
        'idempotency-key': idempotencyKey,
      }
      let backoffMs = 500
      for (let attempt = 1; ; attempt++) {
        let wait: number
        let why: string
        try {
          const res = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(60_000) })
          const text = await res.text()
          if (!RETRIED.has(res.status) || attempt >= options.attempts) {
            console.log(`${res.status} ${res.statusText}`)
            console.log(text)
            if (res.status >= 300) process.exitCode = 1
            return
          }
          why = `${res.status} ${res.statusText}`
          wait = retryAfterMs(res.headers.get('retry-after'), 60_000, clock.nowMs()) ?? backoffMs
        } catch (err) {
          const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name
          if (attempt >= options.attempts) throw new Error(`no answer from ${url} after ${attempt} attempts: ${cause}`, { cause: err })
          why = `no answer (${cause})`
          wait = backoffMs
        }
        // Jitter, so that many senders retrying at once spread out.
        wait = Math.round(wait * (1 + Math.random() * 0.2))
        console.error(`attempt ${attempt} of ${options.attempts}: ${why}; retrying in ${(wait / 1000).toFixed(1)} s`)
        await sleep(wait)
        backoffMs = Math.min(backoffMs * 2, 30_000)
      }
    })
}
