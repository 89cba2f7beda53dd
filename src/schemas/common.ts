import { Type } from 'typebox'
import { MONEY_PATTERN } from '../domain/money.ts'
import { END_OF_INSTANTS, EARLIEST_INSTANT, isInstant } from '../domain/time.ts'

// Every field schema carries a `description` that completes the sentence
// "must be …": the validation errors quote it, and so does the OpenAPI document.

/** Formats the validator knows beyond ajv-formats. */
export const FORMATS: Record<string, (value: string) => boolean> = {
  // ajv-formats' date-time accepts impossible dates such as 02-31; this names real instants only.
  instant: isInstant,
  // PostgreSQL text cannot hold NUL, and UTF-8 cannot hold a lone surrogate: both are refused, never altered.
  text: (value) => !value.includes('\u0000') && value.isWellFormed(),
}

export const Id = Type.Integer({
  minimum: 1,
  maximum: Number.MAX_SAFE_INTEGER,
  description: 'a positive integer no larger than 9007199254740991',
})
export const Text = Type.String({ format: 'text', description: 'a string without NUL characters or unpaired surrogates' })
export const Email = Type.String({ format: 'email', maxLength: 320, description: 'an e-mail address' })
export const INSTANT_DESCRIPTION = `an ISO 8601 timestamp with a UTC offset naming a real date and time, such as 2024-05-01T10:00:00+02:00, from ${EARLIEST_INSTANT} up to but not including ${END_OF_INSTANTS}`
export const Instant = Type.String({ format: 'instant', description: INSTANT_DESCRIPTION })
export const Money = Type.String({
  pattern: MONEY_PATTERN,
  description: 'a decimal amount with two fraction digits and at most 13 integer digits, without leading zeros, such as "19.90"',
})
export const Currency = Type.String({ pattern: '^[A-Z]{3}$', description: 'a three-letter uppercase currency code, such as "EUR"' })
export const Flag = Type.Boolean({ description: 'true or false' })
export const Tags = Type.Array(Text, { description: 'an array of strings' })

export const Problem = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    errors: Type.Optional(
      Type.Array(Type.Object({ pointer: Type.String(), detail: Type.String() }), {
        description: 'the violations found in the body, one per field, the first 100 of them',
      }),
    ),
    error_count: Type.Optional(Type.Integer({ description: 'how many fields of the body are invalid in all' })),
  },
  { description: 'An RFC 9457 problem', additionalProperties: true },
)
