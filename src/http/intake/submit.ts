import type { CommandOutcome, PointsCommand } from '../../batch/commands.ts'
import type { Outcome, Webhook } from '../../domain/webhook.ts'
import { isCommand, type BatchItem } from '../../batch/commands.ts'
import type { Config } from '../../config.ts'
import type { BatchResult } from '../../write/unit-of-work.ts'
import type { GroupCommitWriter } from '../../write/group-commit.ts'
import type { Metrics } from '../metrics.ts'
import { QueueFullError, WriterUnavailableError } from '../../write/group-commit.ts'
import { databaseUnavailable, ProblemError, unavailable } from '../problem.ts'

// The one way a route hands an item to the group-commit writer. Whatever keeps the item from being
// stored is a 503 with Retry-After, never a 2xx: the queue full, the writer cooling down after the
// database failed, or a batch that failed. Any other error goes on to the error handler (a database
// error there is the same 503).

/** The 503 of an item whose batch failed; `failure` is why, for the log, never for the sender. */
export class NotStored extends ProblemError {
  constructor(
    what: string,
    retryAfterSeconds: number,
    readonly failure: Error,
  ) {
    const refused = unavailable(retryAfterSeconds, `the ${what} could not be stored; retry after the delay in Retry-After`)
    super(refused.problem, refused.headers, { level: 'error', message: `${what} could not be stored`, err: failure })
  }
}

/** What submitting takes of the app's services (src/services.ts, a layer above: spelled out here). */
export interface Writing {
  writer: GroupCommitWriter<BatchItem, BatchResult>
  metrics: Pick<Metrics, 'unavailable'>
  config: Pick<Config, 'RETRY_AFTER_SECONDS'>
}

/** Submits an item and waits for its commit: its outcome, or a 503 thrown (`what` names the item in it). */
export async function submit(services: Writing, item: Webhook, what: string): Promise<Outcome>
export async function submit(services: Writing, item: PointsCommand, what: string): Promise<CommandOutcome>
export async function submit(services: Writing, item: Webhook | PointsCommand, what: string): Promise<Outcome | CommandOutcome> {
  const retryAfter = services.config.RETRY_AFTER_SECONDS
  let result
  try {
    result = await services.writer.submit(item)
  } catch (err) {
    const full = err instanceof QueueFullError
    services.metrics.unavailable.inc({ reason: full ? 'queue-full' : 'database' })
    if (full)
      throw unavailable(retryAfter, 'the service is at capacity; retry after the delay in Retry-After', {
        level: 'warn',
        message: 'write queue full; answering 503',
      })
    if (err instanceof WriterUnavailableError) throw databaseUnavailable(retryAfter, isCommand(item) ? 'change' : 'webhook')
    throw err
  }
  if (result.status === 'failed') throw new NotStored(what, retryAfter, result.error)
  return result
}
