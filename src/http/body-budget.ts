import type { FastifyInstance, FastifyRequest } from 'fastify'
import { unavailable } from './problem.ts'

/**
 * The bytes of request bodies held at once. A body is counted from before it
 * is read until its answer is written or its connection closes, whichever
 * comes first, so aborted and failed requests give their share back too.
 */
export class BodyBudget {
  #inFlight = 0

  constructor(readonly capacity: number) {}

  get inFlight(): number {
    return this.#inFlight
  }

  /**
   * Takes `bytes` from the budget; a function that gives them back (once), or undefined when they
   * do not fit. `alone`: whatever the size, it fits an empty budget (so that it is slow, never
   * refused for ever).
   */
  reserve(bytes: number, alone = false): (() => void) | undefined {
    if (this.#inFlight + bytes > this.capacity && !(alone && this.#inFlight === 0)) return undefined
    this.#inFlight += bytes
    let held = true
    return () => {
      if (!held) return
      held = false
      this.#inFlight -= bytes
    }
  }
}

/**
 * About how many bytes of heap a parsed JSON value takes (V8, 64-bit): what a body costs once
 * parsed, beyond its bytes. Generous on purpose; linear in the value.
 */
export function approximateBytes(value: unknown): number {
  switch (typeof value) {
    case 'string':
      return 16 + 2 * value.length
    case 'number':
    case 'bigint':
      return 16
    case 'object': {
      if (value === null) return 0
      if (Array.isArray(value)) {
        let bytes = 16 + 8 * value.length
        for (const item of value) bytes += approximateBytes(item)
        return bytes
      }
      let bytes = 24
      // for…in rather than Object.entries: no array per member (own keys only, as entries counts them).
      for (const key in value) {
        if (Object.hasOwn(value, key)) bytes += 8 + (16 + 2 * key.length) + approximateBytes((value as Record<string, unknown>)[key])
      }
      return bytes
    }
    default:
      return 0
  }
}

/**
 * What a request's body may cost before it is read: its Content-Length, or the
 * whole BODY_LIMIT when it streams in chunks of unknown total. A declared length
 * over the limit is refused with a 413 without being read, so it costs nothing.
 */
export function declaredBodyBytes(request: FastifyRequest, bodyLimit: number): number {
  const { 'content-length': length, 'transfer-encoding': encoding } = request.headers
  if (length !== undefined) {
    const bytes = Number(length)
    return Number.isSafeInteger(bytes) && bytes <= bodyLimit ? bytes : 0
  }
  return encoding === undefined ? 0 : bodyLimit
}

/**
 * Bounds the memory that request bodies take, whoever sends them: a request
 * whose body does not fit in BODY_BYTES_IN_FLIGHT gets a 503 with Retry-After
 * before its body is read.
 */
export function installBodyBudget(
  app: FastifyInstance,
  budget: BodyBudget,
  options: { bodyLimit: number; retryAfterSeconds: number; onRefused: () => void },
): void {
  app.addHook('preParsing', (request, reply, payload, done) => {
    const bytes = declaredBodyBytes(request, options.bodyLimit)
    if (bytes === 0) return done(null, payload)
    const release = budget.reserve(bytes)
    if (!release) {
      options.onRefused()
      return done(unavailable(options.retryAfterSeconds, 'too many request bodies are being received at once; retry after the delay in Retry-After'))
    }
    // 'close' follows the end of the answer and any early end of the connection, once (and
    // release gives back once), so a plain listener does what once() would, without its wrapper.
    reply.raw.on('close', release)
    done(null, payload)
  })
}
