import type { UuidV7Generator } from '../uuid-v7.ts'
import type { Clock } from '../../clock.ts'
import { bodyHash, changeFor, type FieldError, type Outcome, type Topic, type Webhook } from '../../domain/webhook.ts'
import { problem, unavailable, type ProblemInit } from '../problem.ts'
import { idempotencyKey, type HeaderBag } from './idempotency.ts'
import { NotStored, submit } from './submit.ts'
import { isObject } from './values.ts'
import type { Config } from '../../config.ts'
import type { BatchItem } from '../../batch/commands.ts'
import type { BodyBudget } from '../body-budget.ts'
import type { Metrics } from '../metrics.ts'
import type { BatchResult } from '../../write/unit-of-work.ts'
import type { GroupCommitWriter } from '../../write/group-commit.ts'
import { approximateBytes } from '../body-budget.ts'
import { MalformedBody, parseJsonBody } from '../json-body.ts'
import { boundedValidatorCompiler, type BoundedErrors } from '../bounded-validator.ts'
import { AJV_SETTINGS, fieldErrors, firstErrors, MAX_REPORTED_ERRORS } from '../validation.ts'
import { CustomerBody, OrderBody } from '../../schemas/webhooks.ts'

// One webhook's way from its bytes to its answer: validation, the change it asks for, the writer,
// and the answer a sender gets. The webhook routes call it with what Fastify parsed and validated;
// the console's replay (src/routes/admin/replay.ts) with a stored body, parsed and validated the
// same way here.

/** Request headers kept with each event, for inspection and replay. */
const KEPT_HEADERS = ['content-type', 'user-agent', 'idempotency-key', 'webhook-id', 'webhook-timestamp', 'x-request-id']

/** The kept headers as a JSON object, written as JSON.stringify would write it, without the object. */
function keptHeaders(headers: HeaderBag): string {
  let json = ''
  for (const name of KEPT_HEADERS) {
    const value = headers[name]
    if (typeof value === 'string') json += `${json === '' ? '{' : ','}"${name}":${JSON.stringify(value)}`
  }
  return json === '' ? '{}' : `${json}}`
}

/** What firstErrors finds in a body with nothing to report (the common case), without building it each time. */
const NO_ERRORS: ReturnType<typeof firstErrors> = Object.freeze({ errors: Object.freeze([]) as unknown as FieldError[], count: 0 })

/** The customer a body is about, valid or not, so that erasure finds rejected bodies too. */
function customerIdOf(topic: Topic, body: Record<string, unknown>): number | null {
  const subject = topic === 'order/hook_created' ? body.customer : body
  const id = isObject(subject) ? subject.id : undefined
  return Number.isSafeInteger(id) && (id as number) > 0 ? (id as number) : null
}

export const bodySchemaOf = (topic: Topic) => (topic === 'order/hook_created' ? OrderBody : CustomerBody)

export interface IngestInput {
  shopId: number
  keyId: number
  topic: Topic
  raw: Buffer
  /** The parsed body, or a MalformedBody. */
  parsed: unknown
  /** The schema's errors (bounded-validator.ts), when the body did not validate. */
  validation?: BoundedErrors | undefined
  /** What only the raw text shows (ids). */
  bodyErrors?: FieldError[] | undefined
  headers: HeaderBag
  /** The stored event a console replay runs again. */
  replayOf?: string
}

/** The answer: the 200's body, or a problem; with what the webhook became, for its log line. */
export type IngestAnswer = (
  | { ok: true; body: { event_id: string; status: Exclude<Outcome['status'], 'rejected'> } }
  | { ok: false; problem: ProblemInit; headers?: Record<string, string> }
) & { webhook?: { eventId: string; resourceId: number | null; outcome: string }; failure?: Error }

export interface HookIngestion {
  /** The body validator the webhook routes compile their schemas with. */
  validatorCompiler: ReturnType<typeof boundedValidatorCompiler>
  ingest(input: IngestInput): Promise<IngestAnswer>
  /** A stored body, parsed and validated as the webhook route would today, then ingested. */
  ingestStored(input: Omit<IngestInput, 'parsed' | 'validation' | 'bodyErrors'>): Promise<IngestAnswer>
}

/** What ingestion is given of the app's services (src/services.ts, which names HookIngestion: spelled out here, so that this file, below it, imports nothing of it). */
export interface IngestionServices {
  writer: GroupCommitWriter<BatchItem, BatchResult>
  metrics: Metrics
  config: Config
  parsedBudget: BodyBudget
  clock: Clock
  /** The app's sequence of ids (src/http/uuid-v7.ts). */
  newId: UuidV7Generator
}

export function createHookIngestion(services: IngestionServices): HookIngestion {
  const { metrics, config, parsedBudget } = services
  // One per app: its compiled validators are kept by schema.
  const validatorCompiler = boundedValidatorCompiler(AJV_SETTINGS, MAX_REPORTED_ERRORS)
  const validators = new Map<Topic, (data: unknown) => unknown>()
  const validatorOf = (topic: Topic) => {
    let v = validators.get(topic)
    if (!v) {
      v = validatorCompiler({ schema: bodySchemaOf(topic), method: 'POST', url: topic, httpPart: 'body' }) as (data: unknown) => unknown
      validators.set(topic, v)
    }
    return v
  }

  /** What a body becomes before the writer: synchronous, so that nothing of the parsed body waits for the commit. */
  function prepare(input: IngestInput) {
    const { topic, raw } = input
    const malformed = input.parsed instanceof MalformedBody ? input.parsed.detail : isObject(input.parsed) ? null : 'the body must be a JSON object'
    const body = malformed === null ? (input.parsed as Record<string, unknown>) : {}
    const receivedUs = services.clock.stampUs()
    // One error per field: the schema's first, then what only the raw text shows; the first
    // MAX_REPORTED_ERRORS are answered and stored, with the total in error_count.
    // The validator describes the first invalid fields and counts the rest (bounded-validator.ts).
    // The raw scan's (ids) are among the first: a body's ids come before any array in the schema.
    const validation = malformed === null ? input.validation : undefined
    const found =
      malformed === null && validation === undefined && !input.bodyErrors?.length
        ? NO_ERRORS
        : firstErrors(
            [malformed === null ? [] : [{ pointer: '', detail: malformed }], validation ? fieldErrors(validation) : [], input.bodyErrors ?? []],
            MAX_REPORTED_ERRORS,
            validation?.unlisted ?? 0,
          )
    const errors = found.count > 0 ? found.errors : null
    // Without errors the body is what the schema says.
    const change = errors ? null : changeFor(topic, input.parsed as never, receivedUs)
    const resourceId = Number.isSafeInteger(body.id) ? (body.id as number) : null
    const webhook: Webhook = {
      eventId: services.newId(),
      shopId: input.shopId,
      keyId: input.keyId,
      topic,
      receivedUs,
      body: raw,
      headers: keptHeaders(input.headers),
      idemKey: idempotencyKey(input.headers, 'webhook'),
      bodyHash: bodyHash(topic, raw),
      resourceId,
      customerId: customerIdOf(topic, body),
      change,
      errors,
      ...(input.replayOf === undefined ? {} : { replayOf: input.replayOf }),
    }
    return { webhook, topic, malformed, found, errors, resourceId }
  }

  /** The webhook through the writer, and its answer. */
  async function commit({ webhook, topic, malformed, found, errors, resourceId }: ReturnType<typeof prepare>): Promise<IngestAnswer> {
    // What the change holds until the commit (tags can take many times their bytes) has its own
    // budget, beside the raw bytes' (counted before the body was read).
    const release = parsedBudget.reserve(webhook.change ? approximateBytes(webhook.change) : 0, true)
    if (!release) {
      metrics.unavailable.inc({ reason: 'body-budget' })
      const refused = unavailable(config.RETRY_AFTER_SECONDS, 'too many request bodies are being received at once; retry after the delay in Retry-After')
      return { ok: false, problem: refused.problem, headers: refused.headers }
    }
    let outcome: Outcome
    try {
      outcome = await submit(services, webhook, 'webhook')
    } catch (err) {
      // A failed batch is answered here rather than thrown, so that its log line names the event.
      if (!(err instanceof NotStored)) throw err
      metrics.webhookCounted(webhook.shopId, topic, 'failed')
      return {
        ok: false,
        problem: err.problem,
        headers: err.headers,
        webhook: { eventId: webhook.eventId, resourceId, outcome: 'failed' },
        failure: err.failure,
      }
    } finally {
      release()
    }
    metrics.webhookCounted(webhook.shopId, topic, outcome.status)
    const logged = { eventId: outcome.eventId, resourceId, outcome: outcome.status }
    if (outcome.status === 'rejected' && malformed !== null) {
      return {
        ok: false,
        webhook: logged,
        problem: problem('malformed-json', `${malformed}; the body was stored as event ${outcome.eventId}`, { event_id: outcome.eventId }),
      }
    }
    if (outcome.status === 'rejected') {
      return {
        ok: false,
        webhook: logged,
        problem: problem(
          'invalid-body',
          `the ${topic.split('/')[0]} has ${found.count} invalid field${found.count === 1 ? '' : 's'}` +
            `${found.count > errors!.length ? `, the first ${errors!.length} listed` : ''}; the body was stored as event ${outcome.eventId}`,
          { event_id: outcome.eventId, error_count: found.count, errors: errors! },
        ),
      }
    }
    return { ok: true, body: { event_id: outcome.eventId, status: outcome.status }, webhook: logged }
  }

  // Not async: the input (the parsed body) is let go once prepared, before the commit is awaited.
  const ingest = (input: IngestInput): Promise<IngestAnswer> => commit(prepare(input))

  return {
    validatorCompiler,
    ingest,
    async ingestStored(input) {
      const { parsed, bodyErrors } = parseJsonBody(input.raw, input.topic === 'order/hook_created' ? ['/id', '/customer/id'] : ['/id'])
      let validation: BoundedErrors | undefined
      if (!(parsed instanceof MalformedBody) && isObject(parsed)) {
        const result = validatorOf(input.topic)(parsed)
        if (result !== true) validation = (result as { error: BoundedErrors }).error
      }
      return ingest({ ...input, parsed, validation, bodyErrors })
    },
  }
}
