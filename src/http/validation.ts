import { AjvCompiler } from '@fastify/ajv-compiler'
import type { FastifySchemaValidationError } from 'fastify/types/schema.js'
import type { FieldError } from '../domain/webhook.ts'
import { KEYWORDS, TEXT_PATTERN } from '../schemas/common.ts'

// Turns the validator's errors into one precise line per offending field.
// Field schemas carry a `description` that completes "must be …" (see
// src/schemas/common.ts), so each message says what the field should be.

interface AjvError extends FastifySchemaValidationError {
  instancePath: string
  parentSchema?: { description?: string; pattern?: string }
}

/**
 * What the field must be, for this error. A text field's description is about the characters a
 * string may hold (no NUL): a value that is no string at all (a number among tags) is told it
 * must be a string.
 */
function detailOf(raw: AjvError): string {
  if (raw.keyword === 'type' && raw.parentSchema?.pattern === TEXT_PATTERN) return 'must be a string'
  const description = raw.parentSchema?.description
  return description ? `must be ${description}` : (raw.message ?? 'is invalid')
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
    if (raw.keyword === 'required') {
      yield { pointer: `${raw.instancePath}/${escape(String((raw.params as { missingProperty?: unknown }).missingProperty))}`, detail: 'is required' }
    } else if (!unions.has(raw.instancePath) || raw.keyword === 'anyOf') {
      // (a union's own error speaks for its branches)
      yield { pointer: raw.instancePath, detail: detailOf(raw) }
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
