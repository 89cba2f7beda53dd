import { AjvCompiler } from '@fastify/ajv-compiler'
import type { FastifySchemaCompiler } from 'fastify'

// A webhook body's validator whose cost is bounded by the body, not by its errors.
//
// ajv with allErrors builds one verbose error object per offending value: a 500 KB body of
// 250,000 bad tags cost 140 ms of the event loop and tens of megabytes before the list was cut
// to the first 100. Here a valid body is checked once by ajv stopping at its first error (the
// common path, and faster than allErrors). An invalid one is walked: objects and arrays by this
// file, every other schema (the fields) by ajv with all its errors and messages, so a field's
// errors are what they always were. Only the first `keep` invalid fields are described; the rest
// are counted, with no object or pointer built for them.

/** The shape of an ajv error that `fieldErrors` reads. */
export interface SchemaError {
  instancePath: string
  schemaPath: string
  keyword: string
  params: Record<string, unknown>
  message?: string
  parentSchema?: unknown
}

/** The described errors of an invalid value, and how many invalid fields were not described. */
export type BoundedErrors = SchemaError[] & { unlisted: number }

type Check = ((data: unknown) => boolean) & { errors?: SchemaError[] | null }
type Compile = (schema: object) => Check

export interface AjvSettings {
  customOptions: Record<string, unknown>
  plugins: unknown[]
}

/** Keywords that say nothing about validity, and TypeBox's own (`~kind`, `~optional`). */
const ANNOTATION = new Set(['description', 'title', 'default', 'examples', '$comment', 'deprecated', 'readOnly', 'writeOnly'])
const OBJECT_WALKED = new Set(['type', 'properties', 'required', 'additionalProperties'])
const ARRAY_WALKED = new Set(['type', 'items'])

const escape = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1')
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** Whether the walker knows every validating keyword of `schema` (else ajv checks it whole). */
function walkable(schema: Record<string, unknown>, walked: Set<string>): boolean {
  return Object.keys(schema).every((k) => walked.has(k) || ANNOTATION.has(k) || k.startsWith('~'))
}

class Sink {
  readonly errors = [] as unknown as BoundedErrors
  private described = 0
  constructor(private readonly keep: number) {
    this.errors.unlisted = 0
  }

  /** Whether the next invalid field is to be described (else only counted). */
  describes(): boolean {
    if (this.described < this.keep) return true
    this.errors.unlisted++
    return false
  }

  field(errors: SchemaError[]): void {
    this.described++
    for (const e of errors) this.errors.push(e)
  }
}

/** Checks `data` at `path`, reporting its invalid fields to the sink. */
type Node = (data: unknown, path: string, sink: Sink) => void

interface Plan {
  node: Node
  /** For a field: the check that stops at its first error, and the report of a value it failed. */
  field?: { quick: Check; report: Node }
}

function typeError(schema: object, type: string, path: string): SchemaError {
  return { instancePath: path, schemaPath: '#/type', keyword: 'type', params: { type }, message: `must be ${type}`, parentSchema: schema }
}

function plan(schema: Record<string, unknown>, quick: Compile, full: Compile): Plan {
  if (schema.type === 'object' && walkable(schema, OBJECT_WALKED)) return objectPlan(schema, quick, full)
  if (schema.type === 'array' && isObject(schema.items) && walkable(schema, ARRAY_WALKED)) return arrayPlan(schema, quick, full)
  // A field: ajv, all errors and messages, on this value only.
  const check = quick(schema)
  const describe = full(schema)
  const report: Node = (data, path, sink) => {
    describe(data)
    sink.field((describe.errors ?? []).map((e) => ({ ...e, instancePath: path + e.instancePath })))
  }
  const node: Node = (data, path, sink) => {
    if (!check(data) && sink.describes()) report(data, path, sink)
  }
  return { node, field: { quick: check, report } }
}

function objectPlan(schema: Record<string, unknown>, quick: Compile, full: Compile): Plan {
  const properties = Object.entries((schema.properties ?? {}) as Record<string, Record<string, unknown>>).map(
    ([key, sub]) => [key, escape(key), plan(sub, quick, full).node] as const,
  )
  const known = new Set(properties.map(([key]) => key))
  const required = (schema.required ?? []) as string[]
  const extra = schema.additionalProperties
  const extraNode = isObject(extra) ? plan(extra, quick, full).node : null
  const node: Node = (data, path, sink) => {
    if (!isObject(data)) {
      if (sink.describes()) sink.field([typeError(schema, 'object', path)])
      return
    }
    for (const name of required) {
      if (data[name] === undefined && sink.describes()) {
        sink.field([
          {
            instancePath: path,
            schemaPath: '#/required',
            keyword: 'required',
            params: { missingProperty: name },
            message: `must have required property '${name}'`,
            parentSchema: schema,
          },
        ])
      }
    }
    for (const [key, segment, child] of properties) {
      if (Object.hasOwn(data, key)) child(data[key], `${path}/${segment}`, sink)
    }
    if (extra === false || extraNode) {
      for (const key of Object.keys(data)) {
        if (known.has(key)) continue
        if (extraNode) extraNode(data[key], `${path}/${escape(key)}`, sink)
        else if (sink.describes()) {
          sink.field([
            {
              instancePath: path,
              schemaPath: '#/additionalProperties',
              keyword: 'additionalProperties',
              params: { additionalProperty: key },
              message: 'must NOT have additional properties',
              parentSchema: schema,
            },
          ])
        }
      }
    }
  }
  return { node }
}

function arrayPlan(schema: Record<string, unknown>, quick: Compile, full: Compile): Plan {
  const item = plan(schema.items as Record<string, unknown>, quick, full)
  const node: Node = (data, path, sink) => {
    if (!Array.isArray(data)) {
      if (sink.describes()) sink.field([typeError(schema, 'array', path)])
      return
    }
    const field = item.field
    for (let i = 0; i < data.length; i++) {
      if (!field) item.node(data[i], `${path}/${i}`, sink)
      // A valid item costs one call, an invalid one past the described a count: no path is built.
      else if (!field.quick(data[i]) && sink.describes()) field.report(data[i], `${path}/${i}`, sink)
    }
  }
  return { node }
}

/**
 * A Fastify validator compiler with the same ajv settings as the app's, whose errors are
 * bounded: the first `keep` invalid fields described, the rest counted in `unlisted`.
 */
export function boundedValidatorCompiler(settings: AjvSettings, keep: number): FastifySchemaCompiler<object> {
  const build = AjvCompiler()
  const compiler = (allErrors: boolean) => {
    const options = { ...settings, customOptions: { ...settings.customOptions, allErrors, verbose: allErrors, messages: allErrors } }
    const compile = build({}, options as never) as unknown as (route: { schema: object }) => Check
    return (schema: object) => compile({ schema })
  }
  // (the quick checks' errors are never read: no messages to build)
  const quick = compiler(false)
  const full = compiler(true)
  return ({ schema }) => {
    const whole = quick(schema)
    const root = plan(schema as Record<string, unknown>, quick, full).node
    return (data: unknown) => {
      if (whole(data)) return true
      const sink = new Sink(keep)
      root(data, '', sink)
      if (sink.errors.length === 0 && sink.errors.unlisted === 0) {
        // The walk and ajv disagree (a keyword this file reads differently): ajv's word stands.
        const describe = full(schema)
        describe(data)
        sink.field(describe.errors ?? [{ instancePath: '', schemaPath: '#', keyword: 'invalid', params: {}, message: 'is invalid' }])
      }
      return { error: sink.errors as never }
    }
  }
}
