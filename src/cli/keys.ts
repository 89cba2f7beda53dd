import type { Clock } from '../clock.ts'
import { Command, InvalidArgumentError } from 'commander'
import { formatInstant } from '../domain/time.ts'
import { issueKey, type IssuedKey } from '../keys/issue-key.ts'
import { lazySecretBox } from '../keys/secret-box.ts'
import { issuePublishableKey, issueSigningSecret, MAX_ORIGINS, parseOrigin } from '../keys/storefront-keys.ts'
import { findKeyById, findShop, listKeys, originsOf, revokeKey } from '../repos/keys-repo.ts'
import { auditCommandLine } from './audit.ts'
import { withBackend } from './backend.ts'

const SHOP_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/

export function shopName(value: string): string {
  if (!SHOP_NAME.test(value)) throw new InvalidArgumentError('a shop name is 1 to 64 letters, digits, dots, dashes or underscores')
  return value
}

function origin(value: string, previous: string[] = []): string[] {
  const parsed = parseOrigin(value)
  if (parsed === undefined)
    throw new InvalidArgumentError('an origin is a scheme, a host and an optional port, such as https://shop.example or http://localhost:8080')
  if (previous.length >= MAX_ORIGINS) throw new InvalidArgumentError(`a publishable key lists at most ${MAX_ORIGINS} origins`)
  return [...previous, parsed]
}

/** What keys create makes: a secret key, a publishable key, or a storefront signing secret. */
const WHAT = { secret: 'key', publishable: 'publishable key', signing: 'signing secret' } as const

function keyId(value: string): number {
  if (!/^[1-9]\d{0,9}$/.test(value)) throw new InvalidArgumentError('a key id is a whole number from 1 to 9999999999, as keys list shows it')
  return Number(value)
}

export function keysCommand(clock: Clock): Command {
  const keys = new Command('keys').description('create, list and revoke API keys')

  keys
    .command('create')
    .description(
      'create the shop if needed, then a new key for it; the key is printed once, on the last line. ' +
        'A secret key (sk_…) by default; --publishable a storefront key (pk_…) for pages on the --origin(s) given; ' +
        '--signing a storefront signing secret (ss_…) whose id is the kid of the customer tokens it signs',
    )
    .requiredOption('--shop <name>', 'the shop the key belongs to', shopName)
    .option('--publishable', 'a publishable key for the storefront routes, safe in a page (needs --origin)')
    .option('--origin <origin>', 'with --publishable: an origin whose pages may use it, such as https://shop.example (repeat for more)', origin)
    .option('--signing', "a storefront signing secret, for the shop's server to sign customer tokens with")
    .action((options: { shop: string; publishable?: boolean; origin?: string[]; signing?: boolean }) =>
      withBackend(async ({ db }) => {
        if (options.publishable && options.signing) throw new Error('choose one of --publishable and --signing')
        if (options.origin && !options.publishable) throw new Error('--origin goes with --publishable')
        if (options.publishable && !options.origin) throw new Error('a publishable key needs at least one --origin, such as --origin https://shop.example')
        const kind = options.publishable ? 'publishable' : options.signing ? 'signing' : 'secret'
        let issued: IssuedKey
        if (kind === 'publishable') issued = await issuePublishableKey(db, options.shop, options.origin!, clock.nowUs())
        else if (kind === 'signing') {
          const { loadConfig } = await import('../config.ts')
          issued = await issueSigningSecret(db, lazySecretBox(loadConfig()), options.shop, clock.nowUs())
        } else issued = await issueKey(db, options.shop, clock.nowUs())
        const stored = (await findKeyById(db, issued.keyId))!
        await auditCommandLine(
          db,
          {
            action: 'key.create',
            shopId: issued.shopId,
            target: String(issued.keyId),
            detail: {
              hint: stored.hint,
              shop_created: issued.shopCreated,
              ...(kind === 'secret' ? {} : { kind }),
              ...(options.origin ? { origins: [...new Set(options.origin)] } : {}),
            },
          },
          clock.nowUs(),
        )
        if (issued.shopCreated) console.log(`created shop ${options.shop}`)
        if (kind === 'publishable')
          console.log(`created publishable key ${issued.keyId} for shop ${options.shop}, for pages on ${[...new Set(options.origin)].join(', ')}:`)
        else if (kind === 'signing')
          console.log(`created signing secret ${issued.keyId} (kid "${issued.keyId}") for shop ${options.shop}; store it now, it is not shown again:`)
        else console.log(`created ${WHAT[kind]} ${issued.keyId} for shop ${options.shop}; store it now, it is not shown again:`)
        console.log(issued.key)
      }),
    )

  keys
    .command('list')
    .description(
      "list keys: id (a signing secret's kid), masked hint, kind (secret, publishable, signing), shop, origins (publishable keys), created, last used (by any request, reads included; to within 10 s), revoked",
    )
    .option('--shop <name>', "only this shop's keys", shopName)
    .action((options: { shop?: string }) =>
      withBackend(async ({ db }) => {
        if (options.shop !== undefined && !(await findShop(db, options.shop))) throw new Error(`no shop named ${options.shop}`)
        const rows = await listKeys(db, options.shop)
        const origins = await originsOf(
          db,
          rows.filter((r) => r.kind === 'publishable').map((r) => Number(r.id)),
        )
        const table = rows.map((r) => ({
          id: String(r.id),
          hint: r.hint,
          kind: r.kind,
          shop: r.shop,
          origins: (origins.get(Number(r.id)) ?? []).join(' ') || '-',
          created: formatInstant(r.created_at),
          'last used': formatInstant(r.last_used_at) ?? 'never',
          revoked: formatInstant(r.revoked_at) ?? 'no',
        }))
        printTable(table, ['id', 'hint', 'kind', 'shop', 'origins', 'created', 'last used', 'revoked'])
      }),
    )

  keys
    .command('revoke')
    .description('revoke a key; requests with it get 401 within KEY_CACHE_SECONDS')
    .argument('<id>', 'the key id, as keys list shows it', keyId)
    .action((id: number) =>
      withBackend(async ({ db }) => {
        const done = await revokeKey(db, id, clock.nowUs())
        if (done.result === 'unknown') throw new Error(`no key with id ${id}; keys list shows the ids`)
        if (done.result === 'already') throw new Error(`key ${id} was already revoked, at ${formatInstant(done.revokedAt)}`)
        const key = (await findKeyById(db, id))!
        await auditCommandLine(
          db,
          { action: 'key.revoke', shopId: key.shopId, target: String(id), detail: { hint: key.hint, ...(key.kind === 'secret' ? {} : { kind: key.kind }) } },
          clock.nowUs(),
        )
        console.log(`revoked key ${id}`)
      }),
    )
  return keys
}

export function printTable(rows: Record<string, string>[], columns: string[]): void {
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => r[c]!.length)))
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join('  ')
      .trimEnd()
  console.log(line(columns))
  for (const row of rows) console.log(line(columns.map((c) => row[c]!)))
}
