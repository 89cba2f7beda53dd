import { Type } from 'typebox'
import { MONEY_PATTERN } from '../domain/money.ts'
import { END_OF_INSTANTS, EARLIEST_INSTANT, isInstant } from '../domain/time.ts'
import type { TMoney } from './field-kinds.ts'

// Every field schema carries a `description` that completes the sentence
// "must be …": the validation errors quote it, and so does the OpenAPI document.

// The rules are standard JSON Schema keywords where they can be (patterns, lengths), so that a
// body that validates against the OpenAPI document is accepted. What a pattern cannot say (that a
// timestamp names a real date within the accepted span) is the `x-instant` keyword, which the
// service's validator knows and other validators ignore; the description says it in words.

/** The keywords the validator knows beyond JSON Schema. */
export const KEYWORDS: Record<string, (value: string) => boolean> = {
  // The pattern checks the syntax; this the calendar (no 02-31) and the span.
  'x-instant': isInstant,
}

/** ISO 8601 with a UTC offset; the syntax of readInstant in src/domain/time.ts. */
export const INSTANT_PATTERN = '^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:?[0-9]{2})$'

export const Id = Type.Integer({
  minimum: 1,
  maximum: Number.MAX_SAFE_INTEGER,
  description: 'a positive integer no larger than 9007199254740991',
})
// PostgreSQL text cannot hold NUL, and UTF-8 cannot hold a lone surrogate: both are refused, never
// altered. Read as a Unicode pattern (the `u` flag), which sees a surrogate pair as one character.
export const TEXT_PATTERN = '^[^\\u0000\\uD800-\\uDFFF]*$'
export const Text = Type.String({ pattern: TEXT_PATTERN, description: 'a string without NUL characters or unpaired surrogates' })
const STORABLE = new RegExp(TEXT_PATTERN, 'u')
/** True for text both databases hold exactly (the `Text` rule): what a query or a path may compare stored text with. */
export const isStorableText = (text: string) => STORABLE.test(text)
export const Email = Type.String({ format: 'email', maxLength: 320, description: 'an e-mail address' })
export const INSTANT_DESCRIPTION = `an ISO 8601 timestamp with a UTC offset naming a real date and time, such as 2024-05-01T10:00:00+02:00, from ${EARLIEST_INSTANT} up to but not including ${END_OF_INSTANTS}`
export const Instant = Type.String({ pattern: INSTANT_PATTERN, 'x-instant': true, description: INSTANT_DESCRIPTION })
export const Money = Type.String({
  pattern: MONEY_PATTERN,
  description: 'a decimal amount with two fraction digits and at most 13 integer digits, without leading zeros, such as "19.90"',
}) as TMoney
export const Currency = Type.String({ pattern: '^[A-Z]{3}$', description: 'a three-letter uppercase currency code, such as "EUR"' })
export const Flag = Type.Boolean({ description: 'true or false' })
export const Tags = Type.Array(Text, { description: 'an array of strings' })
