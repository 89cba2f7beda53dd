import type { FastifyRequest } from 'fastify'
import { MalformedBody } from '../json-body.ts'
import type { FieldError } from '../../domain/webhook.ts'
import { problem, type ProblemInit } from '../problem.ts'
import { fieldErrors, firstErrors } from '../validation.ts'
import { isObject } from './values.ts'

// The body of a command (a redemption, an adjustment), validated with attachValidation: the route
// answers its own 400 or 422, so that every field's error is listed, with the numbers the JSON
// parser rounded (which the schema saw as integers) among them.

/** The 400 of a body that is not a JSON object, or the 422 of one that breaks its schema; undefined for a valid body. */
export function commandBodyProblem(
  request: FastifyRequest,
  what: string,
  more: (body: Record<string, unknown>) => FieldError[] = () => [],
): ProblemInit | undefined {
  const body = request.body
  if (body instanceof MalformedBody) return problem('malformed-json', body.detail)
  if (!isObject(body)) return problem('malformed-json', 'the body must be a JSON object')
  // `__proto__` keys the parser dropped (src/http/json-body.ts): named, not lost unseen.
  const dropped = (request.droppedKeys ?? []).map((pointer) => ({
    pointer,
    detail: `is a key no body takes: ${JSON.stringify(pointer.split('/').pop())} is never read`,
  }))
  const schema = firstErrors([request.validationError ? fieldErrors(request.validationError.validation) : [], request.bodyErrors ?? [], dropped])
  // `more`: the route's own checks of the body, listed with the schema's when the schema refuses
  // it, so that one answer names every field to fix (a field the schema names keeps its error).
  const found = schema.count === 0 ? schema : firstErrors([schema.errors, more(body)], undefined, schema.count - schema.errors.length)
  // The validator's list is not needed past this point.
  if (request.validationError) request.validationError.validation.length = 0
  if (found.count === 0) return undefined
  return problem('invalid-body', `the ${what} has ${found.count} invalid field${found.count === 1 ? '' : 's'}`, {
    error_count: found.count,
    errors: found.errors,
  })
}
