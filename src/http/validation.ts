import { AjvCompiler } from '@fastify/ajv-compiler'
import type { FastifySchemaValidationError } from 'fastify/types/schema.js'
import { EARLIEST_INSTANT, END_OF_INSTANTS, readInstant } from '../domain/time.ts'
import type { FieldError } from '../domain/webhook.ts'
import { KEYWORDS, TEXT_PATTERN } from '../schemas/common.ts'

// Turns the validator's errors into one precise line per offending field, naming the fault.
// Field schemas carry a `description` that completes "must be …" (see src/schemas/common.ts):
// it is the message where the fault is the value's form (a type, a pattern, a format). Where the
// value has the right form and breaks a bound (too long, too few items, too small, not one of the
// allowed values, out of the accepted span), the message says that bound and what was sent.

interface AjvError extends FastifySchemaValidationError {
  instancePath: string
  parentSchema?: { description?: string; pattern?: string; properties?: Record<string, unknown> }
  /** The value (verbose mode). */
  data?: unknown
  /** The keyword's value in the schema (verbose mode): an anyOf's branches. */
  schema?: unknown
}

const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`
const shown = (value: unknown) => {
  const text = JSON.stringify(value) ?? String(value)
  return text.length > 40 ? `${text.slice(0, 37)}…` : text
}

/** Why a string with an instant's syntax is not one: no such date, or outside the accepted span; null when it is one. */
export function instantFault(text: string): string | null {
  const read = readInstant(text)
  if (read.ok) return null
  if (read.reason === 'range') return `is outside the accepted span of instants, from ${EARLIEST_INSTANT} up to but not including ${END_OF_INSTANTS}`
  if (read.reason === 'date') {
    return `names no real date and time (such as the 31st of a 30-day month, or an hour past 23): it must be an instant from ${EARLIEST_INSTANT} up to but not including ${END_OF_INSTANTS}`
  }
  return 'must be an ISO 8601 timestamp with a UTC offset, such as 2024-05-01T10:00:00Z'
}

/**
 * What is wrong with the field, for this error. A text field's description is about the
 * characters a string may hold (no NUL): a value that is no string at all (a number among tags)
 * is told it must be a string.
 */
export function faultOf(raw: AjvError): string {
  const params = raw.params as Record<string, unknown>
  const limit = Number(params.limit)
  const data = raw.data
  const description = raw.parentSchema?.description
  switch (raw.keyword) {
    case 'required':
      return 'is required'
    case 'type':
      if (raw.parentSchema?.pattern === TEXT_PATTERN) return 'must be a string'
      break
    case 'maxLength':
      return `must be at most ${plural(limit, 'character')} long, not ${[...String(data)].length}`
    case 'minLength':
      return limit === 1 ? 'must not be empty' : `must be at least ${plural(limit, 'character')} long, not ${[...String(data)].length}`
    case 'minItems':
      return `must hold at least ${plural(limit, 'item')}, not ${Array.isArray(data) ? data.length : 0}${description ? ` (${description})` : ''}`
    case 'maxItems':
      return `must hold at most ${plural(limit, 'item')}, not ${Array.isArray(data) ? data.length : '?'}`
    case 'minimum':
      return `must be at least ${limit}, not ${shown(data)}`
    case 'maximum':
      return `must be at most ${limit}, not ${shown(data)}`
    case 'exclusiveMinimum':
      return `must be more than ${limit}, not ${shown(data)}`
    case 'exclusiveMaximum':
      return `must be less than ${limit}, not ${shown(data)}`
    case 'enum':
      return `must be one of ${(params.allowedValues as unknown[]).map((v) => String(v)).join(', ')}, not ${shown(data)}`
    case 'anyOf': {
      // A union of constants (bucket: day, week or month) names them; another union says what it takes.
      const branches = Array.isArray(raw.schema) ? (raw.schema as { const?: unknown }[]) : []
      if (branches.length > 0 && branches.every((b) => b.const !== undefined)) {
        return `must be one of ${branches.map((b) => String(b.const)).join(', ')}, not ${shown(data)}`
      }
      // A value or null, with no words of its own: what the value must be, or null (not "must match a schema in anyOf").
      if (description === undefined) {
        const values = (branches as { type?: unknown; description?: string }[]).filter((b) => b.type !== 'null')
        const said = [...new Set(values.map((b) => b.description))]
        if (values.length < branches.length && said.length > 0 && said.every((d) => d !== undefined)) return `must be ${said.join(' or ')}, or null`
      }
      break
    }
    case 'not':
      // A key a record refuses (Type.Never for its other keys): the description says what keys it takes.
      return `is not a key it takes${description ? `: a key must be ${description}` : ''}`
    case 'additionalProperties':
      return `is not a field it takes${raw.parentSchema?.properties ? ` (it takes ${Object.keys(raw.parentSchema.properties).join(', ')})` : ''}`
    case 'x-instant': {
      const fault = typeof data === 'string' ? instantFault(data) : null
      if (fault) return fault
      break
    }
  }
  return description ? `must be ${description}` : (raw.message ?? 'is invalid')
}

/** Where the fault is: the field, or for an unknown one (additionalProperties) the unknown field itself. */
function pointerOf(raw: AjvError): string {
  if (raw.keyword === 'additionalProperties')
    return `${raw.instancePath}/${escape(String((raw.params as { additionalProperty?: unknown }).additionalProperty))}`
  if (raw.keyword === 'required') return `${raw.instancePath}/${escape(String((raw.params as { missingProperty?: unknown }).missingProperty))}`
  return raw.instancePath
}

/** The validator's errors as one line of text, each field once (a union's branches speak through the union): for a 400 of a query or a path. */
export function errorsText(errors: readonly FastifySchemaValidationError[], dataVar: string, max = 10): string {
  const lines = firstErrors([fieldErrors(errors)], Infinity).errors.map((e) => `${dataVar}${e.pointer} ${e.detail}`)
  return lines.slice(0, max).join(', ') + (lines.length > max ? `, and ${lines.length - max} more` : '')
}

interface KeywordHost {
  addKeyword(definition: {
    keyword: string
    type: 'string'
    schemaType: 'boolean'
    errors: false
    validate: (schema: boolean, data: string) => boolean
  }): unknown
}

/** Our keywords beyond the standard ones (src/schemas/common.ts). */
function addKeywords(ajv: KeywordHost) {
  for (const [keyword, check] of Object.entries(KEYWORDS)) {
    ajv.addKeyword({ keyword, type: 'string', schemaType: 'boolean', errors: false, validate: (on, data) => !on || check(data) })
  }
  return ajv
}

/** The validator's settings: the app's, and the webhook bodies' bounded validator (bounded-validator.ts). */
export const AJV_SETTINGS = {
  customOptions: { allErrors: true, coerceTypes: false, removeAdditional: false, useDefaults: false, verbose: true },
  plugins: [addKeywords],
}

/** Most errors a 422 lists and its event stores; `error_count` gives the total. */
export const MAX_REPORTED_ERRORS = 100

const escape = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1')

/** One error per validator error, in its order; `firstErrors` keeps the first of each field. */
export function* fieldErrors(errors: readonly FastifySchemaValidationError[]): Generator<FieldError> {
  const unions = new Set<string>()
  for (const raw of errors as AjvError[]) {
    if (raw.keyword === 'anyOf') unions.add(raw.instancePath)
  }
  for (const raw of errors as AjvError[]) {
    // A union's own error speaks for its branches.
    if (raw.keyword === 'required' || raw.keyword === 'additionalProperties' || !unions.has(raw.instancePath) || raw.keyword === 'anyOf') {
      yield { pointer: pointerOf(raw), detail: faultOf(raw) }
    }
  }
}

/**
 * One error per field, in the order found (the first list that names a field wins),
 * and at most `max` of them; `count` is how many fields were invalid in all, with `uncounted`
 * fields known only by number (the bounded validator's unlisted ones, which no other list names).
 * Linear in the number of errors: a body of half a million bad array items
 * must cost no more than reading it.
 */
export function firstErrors(lists: readonly Iterable<FieldError>[], max = MAX_REPORTED_ERRORS, uncounted = 0): { errors: FieldError[]; count: number } {
  const seen = new Set<string>()
  const errors: FieldError[] = []
  for (const list of lists) {
    for (const error of list) {
      if (seen.has(error.pointer)) continue
      seen.add(error.pointer)
      if (errors.length < max) errors.push(error)
    }
  }
  return { errors, count: seen.size + uncounted }
}

type Check = ((data: unknown) => boolean) & { errors?: FastifySchemaValidationError[] | null }
const compiled = new WeakMap<object, Check>()
let compile: ((route: { schema: object }) => Check) | undefined

/**
 * The fields a value breaks of a schema, one error per field as a 422 lists them, checked with the
 * app's validator settings: what the command line and a CSV's lines are checked with, outside a route.
 */
export function checkValue(schema: object, value: unknown): FieldError[] {
  let check = compiled.get(schema)
  if (!check) {
    compile ??= AjvCompiler()({}, { ...AJV_SETTINGS, customOptions: { ...AJV_SETTINGS.customOptions, allErrors: true } } as never) as unknown as (route: {
      schema: object
    }) => Check
    compiled.set(schema, (check = compile({ schema })))
  }
  return check(value) ? [] : firstErrors([fieldErrors(check.errors ?? [])]).errors
}
