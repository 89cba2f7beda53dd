import { Ajv2020 } from 'ajv/dist/2020.js'
import type { ValidateFunction } from 'ajv'
import type { FastifyInstance } from 'fastify'
import { PROBLEM_SCHEMAS, type ProblemStatus } from '../../src/schemas/problems.ts'

// Holds every answer the service gives in the tests to its OpenAPI document: the status is
// declared for the operation, the content type is one declared for that status, the declared
// headers are there (the required ones) and match their schemas, and the body validates with the
// declared schema. The harness installs it on every app it builds; a mismatch fails the test.

type Json = Record<string, any>

export interface Answer {
  method: string
  /** The request target, query included. */
  url: string
  status: number
  /** Header names in lower case. */
  headers: Record<string, string | string[] | number | undefined>
  body: string
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'])

/**
 * Answers that no operation gives: for a path the document has, a method it does not take, or
 * for a path it does not have, or a request Node refused before routing it. Each is a problem.
 */
const UNROUTED: ProblemStatus[] = [400, 404, 405, 408, 413, 415, 417, 431, 503]

const escapePointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1')

export class Contract {
  private readonly ajv: Ajv2020
  private readonly routes: { method: string; pattern: RegExp; path: string; op: Json }[] = []
  private readonly compiled = new Map<string, ValidateFunction>()
  private readonly unrouted = new Map<number, ValidateFunction>()

  constructor(private readonly doc: Json) {
    this.ajv = new Ajv2020({ strict: false, validateSchema: false, allErrors: true, formats: { email: true } })
    this.ajv.addSchema(doc, 'openapi')
    for (const [path, item] of Object.entries(doc.paths as Json)) {
      // (A parameter may be empty: Fastify routes /v3/customers/ to /v3/customers/:id with id ''.)
      const pattern = new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[^}]+\\?\}|\{[^}]+\}/g, '[^/]*')}$`)
      for (const [method, op] of Object.entries(item as Json)) {
        if (METHODS.has(method)) this.routes.push({ method, pattern, path, op })
      }
    }
    for (const status of UNROUTED) this.unrouted.set(status, this.ajv.compile(PROBLEM_SCHEMAS[status]))
  }

  private validator(pointer: string): ValidateFunction {
    let v = this.compiled.get(pointer)
    if (!v) {
      v = this.ajv.getSchema(`openapi#${pointer}`)
      if (!v) throw new Error(`no schema at ${pointer}`)
      this.compiled.set(pointer, v)
    }
    return v
  }

  /** What is wrong with the answer, or an empty list. */
  check(answer: Answer): string[] {
    const method = answer.method.toLowerCase()
    const path = answer.url.split('?')[0]!
    const asGet = method === 'head' ? 'get' : method
    const route = this.routes.find((r) => r.method === asGet && r.pattern.test(path))
    const contentType = String(answer.headers['content-type'] ?? '')
      .split(';')[0]!
      .trim()
      .toLowerCase()
    const bodyOf = (): { ok: true; value: unknown } | { ok: false } => {
      if (method === 'head') return { ok: false }
      try {
        return { ok: true, value: JSON.parse(answer.body) }
      } catch {
        return { ok: false }
      }
    }
    const where = `${answer.method} ${answer.url} → ${answer.status}`
    if (!route) {
      const validate = this.unrouted.get(answer.status)
      if (!validate)
        return [
          `${where}: no operation of the document answers ${answer.method} ${path}, and ${answer.status} is not an answer to an unrouted request (${UNROUTED.join(', ')})`,
        ]
      if (contentType !== 'application/problem+json') return [`${where}: content type ${contentType || '(none)'}, not application/problem+json`]
      const body = bodyOf()
      if (method !== 'head' && (!body.ok || !validate(body.value)))
        return [`${where}: the problem does not validate: ${this.ajv.errorsText(validate.errors)} in ${answer.body.slice(0, 300)}`]
      if (answer.status === 405 && answer.headers.allow !== 'POST') return [`${where}: a 405 without Allow: POST`]
      return []
    }
    const responses = route.op.responses as Json
    const key = [String(answer.status), `${String(answer.status)[0]}XX`, 'default'].find((k) => k in responses)
    if (!key) return [`${where}: ${answer.status} is not declared for ${route.op.operationId} (declared: ${Object.keys(responses).join(', ')})`]
    const response = responses[key] as Json
    const base = `/paths/${escapePointer(route.path)}/${route.method}/responses/${key}`
    const problems: string[] = []
    for (const [name, header] of Object.entries((response.headers ?? {}) as Json)) {
      const value = answer.headers[name.toLowerCase()]
      if (value === undefined) {
        if (header.required) problems.push(`${where}: the required header ${name} is missing`)
        continue
      }
      const v = this.validator(`${base}/headers/${escapePointer(name)}/schema`)
      if (!v(String(value))) problems.push(`${where}: header ${name}: ${JSON.stringify(value)} ${this.ajv.errorsText(v.errors)}`)
    }
    const content = response.content as Json | undefined
    if (!content) {
      if (answer.body !== '') problems.push(`${where}: a body where the document declares none`)
      return problems
    }
    if (!(contentType in content)) {
      problems.push(`${where}: content type ${contentType || '(none)'}, declared ${Object.keys(content).join(', ')}`)
      return problems
    }
    if (method === 'head') return problems
    const validate = this.validator(`${base}/content/${escapePointer(contentType)}/schema`)
    const value = contentType.endsWith('json') ? bodyOf() : { ok: true as const, value: answer.body }
    if (!value.ok) problems.push(`${where}: the body is not JSON: ${answer.body.slice(0, 200)}`)
    else if (!validate(value.value))
      problems.push(`${where}: the body does not validate: ${this.ajv.errorsText(validate.errors)} in ${answer.body.slice(0, 300)}`)
    return problems
  }
}

let shared: Contract | undefined

/** The contract of the document `app` serves (one per process: every app serves the same one). */
export function contractOf(app: FastifyInstance): Contract {
  shared ??= new Contract(app.swagger() as unknown as Json)
  return shared
}

/**
 * Checks every answer `app` sends against its document, as Fastify sends it; mismatches go to
 * `violations` (the harness fails the test with them). Call before the app is ready.
 */
export function installContractCheck(app: FastifyInstance, violations: string[]): void {
  app.addHook('onSend', async (request, reply, payload) => {
    const body = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : payload == null ? '' : null
    if (body === null) return payload // a stream: not sent by this service today
    const contract = contractOf(app)
    const found = contract.check({ method: request.method, url: request.url, status: reply.statusCode, headers: reply.getHeaders() as Answer['headers'], body })
    violations.push(...found)
    return payload
  })
}
