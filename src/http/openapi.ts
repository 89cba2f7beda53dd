import type { TSchema } from 'typebox'
import { IdempotencyKeyHeader, RequestIdHeader, WebhookIdHeader } from '../schemas/webhooks.ts'
import { NAMED_SCHEMAS } from '../schemas/components.ts'

// What @fastify/swagger cannot say from the route schemas alone: the servers, the names of the
// schemas (so generated clients get named types), the request headers of the webhooks, and
// the 405 of every other method on a webhook path.

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
type JsonObject = { [key: string]: Json }

const isObject = (value: Json | undefined): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value)

/** JSON text with sorted keys: equal schemas, equal keys. */
function canonical(value: Json): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (isObject(value)) {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(value[k]!)}`)
      .join(',')}}`
  }
  return JSON.stringify(value)
}

/** Replaces, leaves first, every subtree equal to a named schema by a $ref to it (but the root when `keepRoot`). */
function nameSubtrees(node: Json, names: Map<string, string>, keepRoot: boolean): Json {
  if (Array.isArray(node)) return node.map((n) => nameSubtrees(n, names, false))
  if (!isObject(node)) return node
  const out: JsonObject = {}
  for (const [k, v] of Object.entries(node)) out[k] = nameSubtrees(v, names, false)
  const name = keepRoot ? undefined : names.get(canonical(out))
  return name ? { $ref: `#/components/schemas/${name}` } : out
}

const toJson = (schema: TSchema): Json => JSON.parse(JSON.stringify(schema)) as Json

/** The named schemas, each with the named schemas inside it replaced by references. */
function components(): { schemas: Record<string, Json>; names: Map<string, string> } {
  const names = new Map<string, string>()
  let schemas: Record<string, Json> = {}
  // Nesting is shallow (an order embeds a customer; a page embeds its entries): a few passes settle it.
  for (let pass = 0; pass < 4; pass++) {
    schemas = Object.fromEntries(Object.entries(NAMED_SCHEMAS).map(([name, schema]) => [name, nameSubtrees(toJson(schema), names, true)]))
    names.clear()
    for (const [name, schema] of Object.entries(schemas)) names.set(canonical(schema), name)
  }
  return { schemas, names }
}

const header = (name: string, schema: TSchema): Json => {
  const { description, ...rest } = toJson(schema) as JsonObject
  return { name, in: 'header', required: false, ...(description === undefined ? {} : { description }), schema: rest }
}

const WEBHOOK_PATH = /^\/v3\/hook\//

/**
 * A route declares a header the answer always carries with `required: true` beside its type;
 * @fastify/swagger copies it into the header's schema, where OpenAPI puts it on the header.
 */
function requiredHeaders(responses: JsonObject): void {
  for (const response of Object.values(responses)) {
    if (!isObject(response) || !isObject(response.headers)) continue
    for (const header of Object.values(response.headers)) {
      if (!isObject(header) || !isObject(header.schema) || header.schema.required !== true) continue
      const { required: _, ...schema } = header.schema
      header.schema = schema
      header.required = true
    }
  }
}

export function completeDocument(document: JsonObject): JsonObject {
  const { schemas, names } = components()
  const paths = nameSubtrees(document.paths ?? {}, names, true) as JsonObject
  for (const [path, item] of Object.entries(paths)) {
    if (!isObject(item)) continue
    for (const operation of Object.values(item)) {
      if (isObject(operation) && isObject(operation.responses)) requiredHeaders(operation.responses)
    }
    if (WEBHOOK_PATH.test(path) && isObject(item.post)) {
      const params = Array.isArray(item.post.parameters) ? item.post.parameters : []
      item.post.parameters = [
        ...params,
        header('Idempotency-Key', IdempotencyKeyHeader),
        header('Webhook-Id', WebhookIdHeader),
        header('X-Request-Id', RequestIdHeader),
      ]
      item.description =
        'Every other method on this path (any that Node parses) is answered 405 Method Not Allowed with `Allow: POST` and a ' +
        'problem of type `/problems/method-not-allowed`, as soon as the headers are read, without a key and without reading a body.'
    }
  }
  const existing = isObject(document.components) ? document.components : {}
  return {
    ...document,
    paths,
    components: { ...existing, schemas: { ...(isObject(existing.schemas) ? existing.schemas : {}), ...schemas } },
  }
}
