import { isUtf8 } from 'node:buffer'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import sjson from 'secure-json-parse'
import type { FieldError } from '../domain/webhook.ts'
import { inexactIntegerErrors, memberIntegerErrors, type IntegerPointer } from './exact-ids.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** The body exactly as received, stored with the event. */
    rawBody?: Buffer
    /** Violations the schema cannot see, found in the raw text. */
    bodyErrors?: FieldError[]
    /** Where the body had `__proto__` (or `constructor.prototype`) keys, which the parser dropped: JSON pointers. */
    droppedKeys?: string[]
  }
}

/** A body that could not be parsed; the webhook route stores it and answers 400. */
export class MalformedBody {
  constructor(readonly detail: string) {}
}

interface ObjectSchema {
  properties?: Record<string, { type?: unknown; properties?: ObjectSchema['properties'] }>
}

/** The integers a body schema declares: its own members', and those of the embedded customer if it has one. */
export function integerPointers(schema: unknown): IntegerPointer[] {
  const properties = (schema as ObjectSchema | undefined)?.properties ?? {}
  const integers = (of: ObjectSchema['properties'], prefix: string) =>
    Object.entries(of ?? {})
      .filter(([, s]) => s.type === 'integer')
      .map(([name]) => `${prefix}/${name}` as IntegerPointer)
  return [...integers(properties, ''), ...integers(properties.customer?.properties, '/customer')]
}

const pointersOf = new WeakMap<object, IntegerPointer[]>()

/** The integers the route's body schema declares (worked out once per route). */
function routePointers(request: FastifyRequest): IntegerPointer[] {
  const schema = request.routeOptions.schema?.body
  if (typeof schema !== 'object' || schema === null) return []
  let pointers = pointersOf.get(schema)
  if (!pointers) pointersOf.set(schema, (pointers = integerPointers(schema)))
  return pointers
}

/**
 * JSON bodies are read as bytes (Fastify stops reading past `bodyLimit` while
 * the body streams in), kept verbatim, then parsed. A body that is not UTF-8
 * or not JSON becomes a MalformedBody rather than an error, so that the
 * route can still store it. `__proto__` and `constructor.prototype` keys are
 * dropped from the parsed value, so no prototype can be polluted; the raw
 * body keeps them.
 */
export function installJsonBody(app: FastifyInstance, bodyLimit: number): void {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit }, (request, body, done) => {
    const raw = body as Buffer
    request.rawBody = raw
    const { parsed, bodyErrors, dropped } = parseJsonBody(raw, routePointers(request))
    if (bodyErrors) request.bodyErrors = bodyErrors
    if (dropped) request.droppedKeys = dropped
    done(null, parsed)
  })
}

/**
 * A body's bytes as the JSON parser reads them: the value (or a MalformedBody), and for an
 * object the violations only the raw text shows (integers the parser rounded). Stored bodies are
 * replayed through it too.
 */
export function parseJsonBody(raw: Buffer, pointers: readonly IntegerPointer[]): { parsed: unknown; bodyErrors?: FieldError[]; dropped?: string[] } {
  if (raw.length === 0) return { parsed: new MalformedBody('the body is empty; send a JSON object') }
  if (!isUtf8(raw)) return { parsed: new MalformedBody('the body is not valid UTF-8') }
  const text = raw.toString('utf8')
  let parsed: unknown
  try {
    parsed = sjson.parse(text, undefined, { protoAction: 'remove', constructorAction: 'remove' })
  } catch (err) {
    return { parsed: new MalformedBody(`the body is not valid JSON: ${(err as Error).message}`) }
  }
  if (typeof parsed === 'object' && parsed !== null) {
    const dropped = droppedKeys(text)
    return { parsed, bodyErrors: inexactIntegerErrors(text, pointers), ...(dropped.length > 0 ? { dropped } : {}) }
  }
  return { parsed }
}

const escapePointer = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1')

/**
 * Where the text has the keys the parser drops (`__proto__`, and `constructor` holding
 * `prototype`), however spelled (`\u005f_proto__`): so that a body that must not hold unknown
 * fields can name them, rather than lose them unseen. Read again only when the text may hold one.
 */
function droppedKeys(text: string): string[] {
  if (!/proto|\\u/i.test(text)) return []
  const found: string[] = []
  // JSON.parse makes `__proto__` an own key like any other (it pollutes nothing). A loop, not
  // recursion: a body nested thousands deep must not overflow the stack. Each member links to its
  // parent, and a pointer is spelled only for a key found, so the walk stays linear in the body.
  type At = { key: string; parent: At | null }
  const pointerOf = (at: At) => {
    const keys: string[] = []
    for (let step: At | null = at; step !== null; step = step.parent) keys.push(escapePointer(step.key))
    return `/${keys.reverse().join('/')}`
  }
  // The members still to look at, the next on top: in the text's order, as recursion would go.
  const pending: [At, unknown][] = []
  const push = (value: unknown, parent: At | null) => {
    if (typeof value !== 'object' || value === null) return
    const members = Object.entries(value)
    for (let i = members.length - 1; i >= 0; i--) pending.push([{ key: members[i]![0], parent }, members[i]![1]])
  }
  push(JSON.parse(text), null)
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [at, member] = next
    if (at.key === '__proto__' || (at.key === 'constructor' && typeof member === 'object' && member !== null && 'prototype' in member))
      found.push(pointerOf(at))
    else push(member, at)
  }
  return found
}

/**
 * The integers JSON.parse rounded inside members that hold a body of their own (`{"order": {…}}`),
 * each member with its schema: added to the request's bodyErrors, which the route's
 * commandBodyProblem lists with the schema's errors.
 */
export function addMemberBodyErrors(request: FastifyRequest, members: Record<string, unknown>): void {
  const raw = request.rawBody
  if (raw === undefined || request.body instanceof MalformedBody) return
  const text = raw.toString('utf8')
  const found = Object.entries(members).flatMap(([member, schema]) => memberIntegerErrors(text, member, integerPointers(schema)))
  if (found.length > 0) request.bodyErrors = [...(request.bodyErrors ?? []), ...found]
}
