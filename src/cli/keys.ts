import type { Clock } from '../clock.ts'
import { Command, InvalidArgumentError } from 'commander'
import { formatInstant } from '../domain/time.ts'
import { issueKey } from '../keys/issue-key.ts'
import { findKeyById, findShop, listKeys, revokeKey } from '../repos/keys-repo.ts'
import { auditCommandLine } from './audit.ts'
import { withBackend } from './backend.ts'

const SHOP_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/

export function shopName(value: string): string {
  if (!SHOP_NAME.test(value)) throw new InvalidArgumentError('a shop name is 1 to 64 letters, digits, dots, dashes or underscores')
  return value
}

function keyId(value: string): number {
  if (!/^[1-9]\d{0,9}$/.test(value)) throw new InvalidArgumentError('a key id is a whole number from 1 to 9999999999, as keys list shows it')
  return Number(value)
}

export function keysCommand(clock: Clock): Command {
  const keys = new Command('keys').description('create, list and revoke API keys')

  keys
    .command('create')
    .description('create the shop if needed, then a new key for it; the key is printed once, on the last line')
    .requiredOption('--shop <name>', 'the shop the key belongs to', shopName)
    .action((options: { shop: string }) =>
      withBackend(async ({ db }) => {
        const issued = await issueKey(db, options.shop, clock.nowUs())
        const stored = (await findKeyById(db, issued.keyId))!
        await auditCommandLine(
          db,
          {
            action: 'key.create',
            shopId: issued.shopId,
            target: String(issued.keyId),
            detail: { hint: stored.hint, shop_created: issued.shopCreated },
          },
          clock.nowUs(),
        )
        if (issued.shopCreated) console.log(`created shop ${options.shop}`)
        console.log(`created key ${issued.keyId} for shop ${options.shop}; store it now, it is not shown again:`)
        console.log(issued.key)
      }),
    )

  keys
    .command('list')
    .description('list keys: id, masked hint, shop, created, last used (by any request, reads included; to within 10 s), revoked')
    .option('--shop <name>', "only this shop's keys", shopName)
    .action((options: { shop?: string }) =>
      withBackend(async ({ db }) => {
        if (options.shop !== undefined && !(await findShop(db, options.shop))) throw new Error(`no shop named ${options.shop}`)
        const rows = await listKeys(db, options.shop)
        const table = rows.map((r) => ({
          id: String(r.id),
          hint: r.hint,
          shop: r.shop,
          created: formatInstant(r.created_at),
          'last used': formatInstant(r.last_used_at) ?? 'never',
          revoked: formatInstant(r.revoked_at) ?? 'no',
        }))
        printTable(table, ['id', 'hint', 'shop', 'created', 'last used', 'revoked'])
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
        await auditCommandLine(db, { action: 'key.revoke', shopId: key.shopId, target: String(id), detail: { hint: key.hint } }, clock.nowUs())
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
