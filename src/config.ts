import { isIP } from 'node:net'
import { Type, type Static } from 'typebox'
import { Value } from 'typebox/value'

// Read once at start, checked against this schema, frozen. A bad value stops
// startup with a message that names the variable.

const Port = Type.Integer({ minimum: 0, maximum: 65535 })
const Count = Type.Integer({ minimum: 0 })

export const ConfigSchema = Type.Object({
  DATABASE_URL: Type.String({
    default: 'sqlite:data/shop-intake.db',
    pattern: '^(sqlite:.+|postgres(ql)?://.+)$',
    description: 'sqlite:PATH or postgres://…',
  }),
  /** PostgreSQL: the schema of the service's tables, created by the first migration (a URL whose options set search_path wins). */
  DATABASE_SCHEMA: Type.String({
    default: 'shop_intake',
    pattern: '^[a-z_][a-z0-9_]{0,62}$',
    description: 'a schema name of lowercase letters, digits and underscores, such as shop_intake',
  }),
  PORT: Type.Integer({ ...Port, default: 8080 }),
  HOST: Type.String({ default: '127.0.0.1', minLength: 1 }),
  LOG_LEVEL: Type.Enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
    default: 'info',
    description: 'one of fatal, error, warn, info, debug, trace, silent',
  }),
  /** Largest request body in bytes, enforced while the body streams in. */
  BODY_LIMIT: Type.Integer({ minimum: 1024, default: 1_048_576 }),
  /** Most bytes of request bodies held at once; past it, 503 with Retry-After before a body is read. */
  BODY_BYTES_IN_FLIGHT: Type.Integer({ minimum: 1024, default: 67_108_864 }),
  /** Most webhooks in one transaction. */
  WRITER_MAX_BATCH: Type.Integer({ minimum: 1, default: 512 }),
  /** Most webhooks waiting for the writer before new ones get a 503. */
  WRITER_MAX_QUEUE: Type.Integer({ minimum: 1, default: 10_000 }),
  /** PostgreSQL: batches committing at once on separate connections (SQLite always commits one at a time). */
  WRITER_LANES: Type.Integer({ minimum: 1, maximum: 32, default: 1 }),
  /**
   * PostgreSQL: `on` loads, decides and writes batches on a writer thread with a pool of its own
   * (WRITER_LANES + 1 connections), as SQLite's are; `off` on the event loop. Off until a hang once
   * seen with it is explained (docs/develop/performance.md).
   */
  PG_WRITER_THREAD: Type.Enum(['on', 'off'], { default: 'off', description: 'on or off' }),
  /** Seconds a sender is told to wait in Retry-After on a 503. */
  RETRY_AFTER_SECONDS: Type.Integer({ minimum: 1, default: 5 }),
  /** Milliseconds to wait for a PostgreSQL connection or statement before answering 503. */
  DB_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 1500 }),
  /** PostgreSQL: most connections the service opens (the writer lanes and the reads share them). */
  DB_POOL_SIZE: Type.Integer({ minimum: 1, maximum: 1000, default: 10 }),
  /** Seconds SIGTERM waits for in-flight webhooks to commit before the process exits anyway. */
  SHUTDOWN_TIMEOUT_SECONDS: Type.Integer({ minimum: 1, default: 10 }),
  /** Webhooks a key may send per second; over it, 429 with Retry-After. 0 turns the limit off. */
  RATE_LIMIT_RPS: Type.Integer({ ...Count, default: 2000 }),
  /** Storefront requests (docs/integrate/storefront.md) one address may make per 10 seconds; over it, 429 with Retry-After. 0 turns it off. */
  STOREFRONT_IP_RATE: Type.Integer({ ...Count, default: 100 }),
  /** Referral claims (docs/program/referrals.md) one address may make per hour; over it, 429 with Retry-After. 0 turns it off. */
  REFERRAL_CLAIMS_PER_IP: Type.Integer({ ...Count, default: 10 }),
  /** Distinct e-mails one referral code may be claimed with per 24 hours, from any address; a new one past it, 429 with Retry-After. 0 turns it off. */
  REFERRAL_EMAILS_PER_CODE: Type.Integer({ ...Count, default: 5 }),
  /** Storefront requests one customer's tokens may make per 10 seconds; over it, 429 with Retry-After. 0 turns it off. */
  STOREFRONT_CUSTOMER_RATE: Type.Integer({ ...Count, default: 30 }),
  /** Milliseconds a client may take to send the request headers. */
  HEADERS_TIMEOUT_MS: Type.Integer({ minimum: 1000, default: 10_000 }),
  /** Milliseconds a client may take to send a whole request, body included. */
  REQUEST_TIMEOUT_MS: Type.Integer({ minimum: 1000, default: 30_000 }),
  /** Most open connections; further ones are refused. */
  MAX_CONNECTIONS: Type.Integer({ minimum: 1, default: 10_000 }),
  /** Days an event (raw body, headers, idempotency key) is kept; older ones are pruned. 0 keeps everything. */
  EVENT_RETENTION_DAYS: Type.Integer({ ...Count, maximum: 36_500, default: 30 }),
  /** Seconds between the service's passes that prune events past EVENT_RETENTION_DAYS. */
  PRUNE_INTERVAL_SECONDS: Type.Integer({ minimum: 1, maximum: 86_400, default: 300 }),
  /** Seconds between samples of the database size and the oldest event's age for /metrics. */
  STORAGE_SAMPLE_SECONDS: Type.Integer({ minimum: 1, maximum: 3_600, default: 30 }),
  /** Seconds between the points sweeper's passes (expiry, expiry warnings, tiers that time changes); 0 turns it off. */
  SWEEP_INTERVAL_SECONDS: Type.Integer({ minimum: 0, maximum: 3_600, default: 20 }),
  /** A reward's pool with fewer codes left than this is nearly empty: /readyz's body and a metric say so (sampled with the storage). */
  REWARD_POOL_LOW: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 20 }),
  /** Seconds an API key lookup is cached; a revoked key stops working within this time. */
  KEY_CACHE_SECONDS: Type.Integer({ ...Count, default: 5 }),
  // The change feed's relay (src/jobs/nats-relay.ts); unset, the feed is only read over HTTP.
  /** NATS server(s) whose JetStream receives the change feed, such as nats://127.0.0.1:4222; unset: no relay. */
  NATS_URL: Type.String({
    default: '',
    pattern: '^((nats|tls|ws|wss)://[^,\\s]+(,(nats|tls|ws|wss)://[^,\\s]+)*)?$',
    description: 'empty, or one or more nats://host:port URLs separated by commas',
  }),
  /** The JetStream stream the relay publishes to, created when missing. */
  NATS_STREAM: Type.String({ default: 'SHOP_INTAKE', pattern: '^[A-Za-z0-9_-]{1,64}$', description: 'a stream name of 1 to 64 letters, digits, - and _' }),
  /** Subjects the relay publishes under (`<prefix>.<shop id>.<type>`); empty: `shop-intake.<deployment id>`, this database's own. */
  NATS_SUBJECT_PREFIX: Type.String({
    default: '',
    pattern: '^([A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*)?$',
    description: 'empty, or NATS subject tokens (letters, digits, - and _) separated by dots, such as acme.loyalty',
  }),
  // Running several processes (docs/operate/several-processes.md).
  /** Server processes `serve` starts (Node's cluster module); more than 1 needs PostgreSQL. */
  WORKERS: Type.Integer({ minimum: 1, maximum: 256, default: 1 }),
  /** Optional: redis://… where the per-key rate limit is counted, shared by every process; empty: each process counts alone. */
  REDIS_URL: Type.String({ default: '', pattern: '^(|rediss?://.+)$', description: 'empty, or redis://host:port (rediss:// for TLS)' }),
  // The operator console (docs/operate/admin-api.md).
  /** Minutes an operator's console session (the si_admin cookie) lasts after signing in. */
  ADMIN_SESSION_MINUTES: Type.Integer({ minimum: 1, maximum: 43_200, default: 720 }),
  /** Milliseconds between the event stream's looks at the events table (GET /v3/admin/events/stream). */
  ADMIN_STREAM_POLL_MS: Type.Integer({ minimum: 50, maximum: 5_000, default: 250 }),
  // Outgoing webhooks (docs/integrate/outgoing-webhooks.md): the sender (src/jobs/webhook-sender.ts).
  /** Milliseconds a subscriber's endpoint may take to answer a delivery before it counts as failed. */
  SUBSCRIPTIONS_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 120_000, default: 10_000 }),
  /** Hours an entry is tried again (exponential backoff with jitter) before its subscription is marked failing. */
  SUBSCRIPTIONS_RETRY_HOURS: Type.Integer({ minimum: 1, maximum: 720, default: 24 }),
  /** Milliseconds before the first retry; each failure doubles it, up to SUBSCRIPTIONS_RETRY_MAX_SECONDS. */
  SUBSCRIPTIONS_RETRY_BASE_MS: Type.Integer({ minimum: 100, maximum: 600_000, default: 1000 }),
  /** The longest wait between two attempts, in seconds. */
  SUBSCRIPTIONS_RETRY_MAX_SECONDS: Type.Integer({ minimum: 1, maximum: 86_400, default: 3600 }),
  /** Deliveries in flight at once per process, to different subscriptions (each holds a database connection on PostgreSQL). */
  SUBSCRIPTIONS_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 64, default: 4 }),
  /** Hours a rotated secret keeps signing beside the new one, unless the rotation names its own grace. */
  SUBSCRIPTIONS_ROTATION_GRACE_HOURS: Type.Integer({ minimum: 0, maximum: 720, default: 24 }),
  /** Most subscriptions a shop may have; one more is refused (409 subscription-limit). */
  SUBSCRIPTIONS_PER_SHOP: Type.Integer({ minimum: 1, maximum: 10_000, default: 50 }),
  /** 1: endpoints on loopback, private, link-local and other non-public addresses are allowed (tests, a private network). */
  SUBSCRIPTIONS_ALLOW_PRIVATE: Type.Integer({ minimum: 0, maximum: 1, default: 0 }),
  /** Where Klaviyo destinations send their events (docs/integrate/klaviyo.md): POST {KLAVIYO_API_URL}/api/events. Set by the operator, so not held to the endpoints' SSRF guard. */
  KLAVIYO_API_URL: Type.String({
    default: 'https://a.klaviyo.com',
    description: 'an http:// or https:// URL with a host, and no user name, query or fragment, such as https://a.klaviyo.com',
  }),
  /** The key that encrypts signing secrets at rest: 32 bytes in base64; empty, the key in SECRETS_KEY_FILE. */
  SECRETS_KEY: Type.String({ default: '', pattern: '^([A-Za-z0-9+/]{43}=)?$', description: 'empty, or 32 bytes in base64 (openssl rand -base64 32)' }),
  /** Where the key is kept when SECRETS_KEY is empty, made (mode 0600) with a random key the first time it is needed. */
  SECRETS_KEY_FILE: Type.String({ default: 'data/secrets.key', minLength: 1 }),
  // Behind a TLS proxy (docs/operate/tls-proxy.md).
  /** The origin browsers reach the console at, such as https://console.example.com; empty: the request's own. */
  PUBLIC_ORIGIN: Type.String({
    default: '',
    description: 'empty, or an origin: http:// or https://, a host and an optional port, with no path, such as https://console.example.com',
  }),
  /** Which proxies' X-Forwarded-Proto, -Host and -For are believed (Fastify's trustProxy); empty: none. */
  TRUST_PROXY: Type.String({
    default: '',
    description:
      'empty, true, false, or addresses and CIDR ranges separated by commas (loopback, linklocal and uniquelocal name those ranges), such as 127.0.0.1,10.0.0.0/8',
  }),
})

export type Config = Readonly<Static<typeof ConfigSchema>>

export class ConfigError extends Error {}

const NUMERIC = new Set(
  Object.entries(ConfigSchema.properties)
    .filter(([, s]) => (s as { type?: string }).type === 'integer')
    .map(([k]) => k),
)

/** The configuration from environment variables, with defaults filled in. */
export function loadConfig(env: Record<string, string | undefined> = process.env, overrides: Partial<Config> = {}): Config {
  const raw: Record<string, unknown> = {}
  for (const name of Object.keys(ConfigSchema.properties)) {
    const text = env[name]
    if (text === undefined || text === '') continue
    if (NUMERIC.has(name)) {
      if (!/^\d+$/.test(text)) throw new ConfigError(`${name} must be a whole number, not "${text}"`)
      raw[name] = Number(text)
    } else raw[name] = text
  }
  const value = Value.Default(ConfigSchema, { ...raw, ...overrides }) as Record<string, unknown>
  const [error] = Value.Errors(ConfigSchema, value)
  if (error) {
    const name = error.instancePath.split('/')[1] ?? 'configuration'
    const description = (ConfigSchema.properties as Record<string, { description?: string }>)[name]?.description
    const reason = description ? `must be ${description}` : error.message
    throw new ConfigError(`${name} ${reason} (got ${JSON.stringify(value[name])})`)
  }
  if ((value.HEADERS_TIMEOUT_MS as number) > (value.REQUEST_TIMEOUT_MS as number)) {
    throw new ConfigError(`HEADERS_TIMEOUT_MS must not exceed REQUEST_TIMEOUT_MS (${value.HEADERS_TIMEOUT_MS} > ${value.REQUEST_TIMEOUT_MS})`)
  }
  if ((value.DB_POOL_SIZE as number) <= (value.WRITER_LANES as number)) {
    throw new ConfigError(
      `DB_POOL_SIZE must be larger than WRITER_LANES, which each hold a connection while they commit (${value.DB_POOL_SIZE} <= ${value.WRITER_LANES})`,
    )
  }
  if ((value.BODY_BYTES_IN_FLIGHT as number) < (value.BODY_LIMIT as number)) {
    throw new ConfigError(`BODY_BYTES_IN_FLIGHT must not be less than BODY_LIMIT (${value.BODY_BYTES_IN_FLIGHT} < ${value.BODY_LIMIT})`)
  }
  checkProxySettings(value)
  if (!isBaseUrl(value.KLAVIYO_API_URL as string))
    throw new ConfigError(`KLAVIYO_API_URL must be ${describe('KLAVIYO_API_URL')} (got ${JSON.stringify(value.KLAVIYO_API_URL)})`)
  return Object.freeze(value) as Config
}

const describe = (name: string) => (ConfigSchema.properties as Record<string, { description?: string }>)[name]!.description!

/** What a pattern cannot say about PUBLIC_ORIGIN and TRUST_PROXY. */
function checkProxySettings(value: Record<string, unknown>): void {
  const origin = value.PUBLIC_ORIGIN as string
  if (origin !== '' && !isOrigin(origin)) throw new ConfigError(`PUBLIC_ORIGIN must be ${describe('PUBLIC_ORIGIN')} (got ${JSON.stringify(origin)})`)
  const trust = value.TRUST_PROXY as string
  if (trust !== '' && trustProxyOption(trust) === undefined)
    throw new ConfigError(`TRUST_PROXY must be ${describe('TRUST_PROXY')} (got ${JSON.stringify(trust)})`)
}

/** Whether `text` is a base URL an API's paths may be added to: http(s), a host, no credentials, query or fragment. */
function isBaseUrl(text: string): boolean {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return false
  }
  return (url.protocol === 'https:' || url.protocol === 'http:') && url.hostname !== '' && !url.username && !url.password && !url.search && !url.hash
}

/** Where a Klaviyo destination POSTs its events: KLAVIYO_API_URL's /api/events. */
export const klaviyoEventsUrl = (config: Pick<Config, 'KLAVIYO_API_URL'>) => `${new URL(config.KLAVIYO_API_URL).href.replace(/\/+$/, '')}/api/events`

/** Whether `text` is an origin exactly as a browser sends it in Origin (lower-case host, no default port, no path). */
function isOrigin(text: string): boolean {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return false
  }
  return (url.protocol === 'https:' || url.protocol === 'http:') && url.origin === text
}

const PROXY_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal'])

/** TRUST_PROXY as Fastify's trustProxy option; undefined when it is none of the forms it may take. */
export function trustProxyOption(text: string): boolean | string[] | undefined {
  if (text === '' || text === 'false') return false
  if (text === 'true') return true
  const entries = text.split(',').map((s) => s.trim())
  return entries.every((e) => PROXY_RANGES.has(e) || isAddressOrRange(e)) ? entries : undefined
}

function isAddressOrRange(entry: string): boolean {
  const [address, bits, ...rest] = entry.split('/')
  const version = isIP(address ?? '')
  if (version === 0 || rest.length > 0) return false
  if (bits === undefined) return true
  return /^[0-9]{1,3}$/.test(bits) && Number(bits) <= (version === 4 ? 32 : 128)
}
