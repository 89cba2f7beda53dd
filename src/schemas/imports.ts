import { Type } from 'typebox'
import { IMPORT_POINTS_MAX } from '../loyalty/imports.ts'
import { Email, Instant, Text } from './common.ts'

// A points import (README, Switching in): the lines of a CSV of balances, each checked as the
// webhooks' fields are (the same e-mail and instant rules), and what an import answers.

/** The columns a file may have; the first three it must have. */
export const IMPORT_COLUMNS = ['customer_id', 'email', 'points', 'expires_at', 'tier'] as const
export const REQUIRED_COLUMNS = ['customer_id', 'email', 'points'] as const

/** One line of the file, its cells as text (an empty optional cell is left out). */
export const ImportLineCells = Type.Object(
  {
    customer_id: Type.String({
      pattern: '^[1-9][0-9]{0,15}$',
      description: "the shop's id of the customer: a positive whole number no larger than 9007199254740991",
    }),
    email: Email,
    points: Type.String({ pattern: '^(0|[1-9][0-9]{0,9})$', description: `a whole number of points from 0 to ${IMPORT_POINTS_MAX}` }),
    expires_at: Type.Optional(Instant),
    tier: Type.Optional(Type.String({ ...Text, minLength: 1, maxLength: 100, description: 'the name of a tier of the shop' })),
  },
  { additionalProperties: false },
)

export const ImportQuery = Type.Object({
  dry_run: Type.Optional(
    Type.Union([Type.Literal('true'), Type.Literal('false')], { description: 'true: check the file and say what it would change, writing nothing' }),
  ),
})

export const ImportSummary = Type.Object(
  {
    dry_run: Type.Boolean(),
    lines: Type.Integer({ minimum: 0, description: "the file's lines of customers (its header and empty lines left out)" }),
    customers_created: Type.Integer({ minimum: 0, description: 'customers the shop did not know, made from their lines' }),
    entries: Type.Integer({ minimum: 0, description: 'import ledger entries written: one per line whose points differ from what earlier imports gave' }),
    points_added: Type.Integer({ minimum: 0 }),
    points_taken: Type.Integer({ minimum: 0, description: 'points a corrected file took back from what an earlier import gave' }),
    unchanged: Type.Integer({ minimum: 0, description: 'lines that changed nothing: an earlier import gave the same points, expiry and tier' }),
    skipped_deleted: Type.Integer({ minimum: 0, description: 'lines of customers deleted in this shop: their data and points stay erased' }),
    expiry_changed: Type.Integer({
      minimum: 0,
      description: "lines whose expires_at set, changed or cleared when their imported points expire (cleared: by the shop's rule again)",
    }),
    points_expired: Type.Integer({
      minimum: 0,
      description: 'points imported with an expires_at already passed: imported, and expired at once (expired entries)',
    }),
    tier_changed: Type.Integer({
      minimum: 0,
      description:
        "lines that set, changed or cleared the customer's imported tier (held for one tier window from their first import); the orders it reaches are priced again at once",
    }),
  },
  { additionalProperties: false },
)
