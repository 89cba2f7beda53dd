import type { FastifySchemaValidationError } from 'fastify/types/schema.js'
import type { FieldError } from '../domain/webhook.ts'

// Turns the validator's errors into one precise line per offending field.
// Field schemas carry a `description` that completes "must be …" (see
// src/schemas/common.ts), so each message says what the field should be.

interface AjvError extends FastifySchemaValidationError {
  instancePath: string
  parentSchema?: { description?: string }
}

const escape = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1')

export function fieldErrors(errors: readonly FastifySchemaValidationError[]): FieldError[] {
  const byPointer = new Map<string, FieldError>()
  const unions = new Set<string>()
  for (const raw of errors as AjvError[]) {
    if (raw.keyword === 'anyOf') unions.add(raw.instancePath)
  }
  for (const raw of errors as AjvError[]) {
    const params = raw.params as Record<string, unknown>
    let pointer = raw.instancePath
    let detail: string
    if (raw.keyword === 'required') {
      pointer = `${pointer}/${escape(String(params.missingProperty))}`
      detail = 'is required'
    } else if (unions.has(pointer) && raw.keyword !== 'anyOf') {
      continue // the union's own error speaks for its branches
    } else {
      const description = raw.parentSchema?.description
      detail = description ? `must be ${description}` : (raw.message ?? 'is invalid')
    }
    if (!byPointer.has(pointer)) byPointer.set(pointer, { pointer, detail })
  }
  return [...byPointer.values()]
}
