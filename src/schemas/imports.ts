import { Type } from 'typebox'
import { IMPORT_POINTS_MAX } from '../loyalty/imports.ts'
import { Email, Instant, Text } from './common.ts'

// A points import (docs/program/imports.md): the lines of a CSV of balances, each checked as the
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
  on_mismatch: Type.Optional(
    Type.Union([Type.Literal('take-file'), Type.Literal('keep-stored')], {
      description:
        "what wins when a line's customer_id and e-mail disagree with the shop's customers (an id known with another e-mail, or a new id with an e-mail " +
        'a customer holds); without it such a file is refused (422, each line at `/<line>/email`). take-file: import those lines as written (the id gets the ' +
        'points; a new id is made with the e-mail). keep-stored: leave them out.',
    }),
  ),
})

/** What an unfinished import tells its reader to do (docs/program/imports.md). */
export const TO_FINISH = 'run the same file again to finish'

export const ImportRunView = Type.Object(
  {
    id: Type.Integer({ minimum: 1 }),
    file_sha256: Type.String({ pattern: '^[0-9a-f]{64}$', description: "the SHA-256 of the file's bytes: importing the same file again finishes this import" }),
    state: Type.Union([Type.Literal('unfinished'), Type.Literal('finished')], {
      description: 'unfinished: stopped midway (killed, an outage, a 503), or still running; finished: every line committed',
    }),
    lines_total: Type.Integer({ minimum: 0, description: 'the lines the import takes in' }),
    lines_done: Type.Integer({ minimum: 0, description: "lines committed, in the file's order (the furthest any run of the file got)" }),
    started_by: Type.String({ description: 'the operator, or `command line (<OS user>)`' }),
    started_at: Instant,
    updated_at: Instant,
    finished_at: Type.Union([Instant, Type.Null()]),
    to_finish: Type.Union([Type.Literal(TO_FINISH), Type.Null()], { description: 'what to do about an unfinished import; null once finished' }),
  },
  { additionalProperties: false },
)

export const ImportRunList = Type.Object(
  { unfinished: Type.Array(ImportRunView, { description: "the shop's imports not finished, oldest first" }) },
  { additionalProperties: false },
)

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
    mismatched: Type.Integer({
      minimum: 0,
      description:
        "lines whose customer_id and e-mail disagreed with the shop's customers: imported as written with on_mismatch=take-file, left out with keep-stored",
    }),
  },
  { additionalProperties: false },
)
