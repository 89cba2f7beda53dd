import type { Clock } from '../clock.ts'
import { Command } from 'commander'
import { findShop } from '../repos/keys-repo.ts'
import { auditCommandLine } from './audit.ts'
import { withBackend } from './backend.ts'
import { shopName } from './keys.ts'

// A shop's settings: its time zone, in which its days are counted (docs/operate/command-line.md).

async function shopOrFail(db: Parameters<typeof findShop>[0], name: string) {
  const shop = await findShop(db, name)
  if (!shop) throw new Error(`no shop named ${name}`)
  return shop
}

const print = (shop: { name: string; created_at: string; time_zone: string }) =>
  console.log(JSON.stringify({ name: shop.name, created_at: shop.created_at, time_zone: shop.time_zone }, null, 2))

export function shopsCommand(clock: Clock): Command {
  const shops = new Command('shops').description("show or change a shop's settings")
  shops
    .command('show')
    .description('print the shop and its settings (its time zone) as JSON')
    .requiredOption('--shop <name>', 'the shop', shopName)
    .action((options: { shop: string }) =>
      withBackend(async ({ db }) => {
        const { formatInstant } = await import('../domain/time.ts')
        const shop = await shopOrFail(db, options.shop)
        print({ ...shop, created_at: formatInstant(shop.created_at) })
      }),
    )
  shops
    .command('set')
    .description("change the shop's settings; its days (the points report, the dashboard) are counted in its time zone from then on")
    .requiredOption('--shop <name>', 'the shop', shopName)
    .requiredOption('--time-zone <zone>', 'an IANA time zone name, such as Europe/Berlin or America/New_York (UTC until set)')
    .action((options: { shop: string; timeZone: string }) =>
      withBackend(async ({ db }) => {
        const [{ checkTimeZone }, { writeTimeZone }, { formatInstant }] = await Promise.all([
          import('../domain/calendar.ts'),
          import('../repos/shop-repo.ts'),
          import('../domain/time.ts'),
        ])
        const checked = checkTimeZone(options.timeZone)
        if ('problem' in checked) throw new Error(`--time-zone: ${checked.problem}; nothing changed`)
        const shop = await shopOrFail(db, options.shop)
        const shopId = Number(shop.id)
        const before = await writeTimeZone(db, { shopId, zone: checked.zone })
        if (before !== null)
          await auditCommandLine(
            db,
            { action: 'shop.set', shopId, target: shop.name, detail: { time_zone: { from: before, to: checked.zone } } },
            clock.nowUs(),
          )
        print({ ...shop, created_at: formatInstant(shop.created_at), time_zone: checked.zone })
      }),
    )
  return shops
}
