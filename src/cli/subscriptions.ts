import type { Clock } from '../clock.ts'
import { Command, InvalidArgumentError } from 'commander'
import { readFile } from 'node:fs/promises'
import { formatUs } from '../domain/time.ts'
import { findShop } from '../repos/keys-repo.ts'
import { deleteSubscription, findSubscription, replaySubscription, shopSubscriptions } from '../repos/subscriptions-repo.ts'
import { auditCommandLine } from './audit.ts'
import { withBackend } from './backend.ts'
import { printTable, shopName } from './keys.ts'

// `shop-intake subscriptions`: outgoing webhooks from the command line, as the admin API does
// them (docs/integrate/outgoing-webhooks.md). The secret is printed once, on the last line. A Klaviyo
// destination (docs/integrate/klaviyo.md) takes its private key from stdin or a file, never from an
// argument, which the shell's history and the process list would keep. What checks, signs and
// resolves is imported when a command runs, so that --help does not load it.

function subscriptionId(value: string): number {
  if (!/^[1-9]\d{0,9}$/.test(value)) throw new InvalidArgumentError('a subscription id is a whole number, as subscriptions list shows it')
  return Number(value)
}

function hours(value: string): number {
  if (!/^\d{1,3}$/.test(value) || Number(value) > 720) throw new InvalidArgumentError('hours from 0 to 720')
  return Number(value)
}

function position(value: string): number {
  if (!/^\d{1,15}$/.test(value)) throw new InvalidArgumentError('a feed position: a whole number, 0 for the start')
  return Number(value)
}

const settings = async () => (await import('../config.ts')).loadConfig()
const feed = () => import('../feed/subscriptions.ts')
const secretBox = async (config: Awaited<ReturnType<typeof settings>>) => (await import('../keys/secret-box.ts')).lazySecretBox(config)

async function shopOf(db: Parameters<typeof findShop>[0], name: string) {
  const shop = await findShop(db, name)
  if (!shop) throw new Error(`no shop named ${name}`)
  return shop
}

/** Most bytes read as a Klaviyo key (its file, or stdin): a key is far shorter; more is not one. */
const KEY_BYTES = 4096

/** The Klaviyo private key from `file`, else from stdin (piped: a terminal would show it); trimmed. */
async function klaviyoKey(file: string | undefined): Promise<string> {
  let text: string
  if (file !== undefined) text = (await readFile(file)).subarray(0, KEY_BYTES).toString('utf8')
  else {
    if (process.stdin.isTTY) {
      throw new Error('give the Klaviyo private key on stdin (such as < klaviyo.key) or with --klaviyo-key-file PATH, never as an argument')
    }
    const chunks: Buffer[] = []
    let read = 0
    for await (const chunk of process.stdin as AsyncIterable<Buffer>) {
      chunks.push(chunk)
      read += chunk.length
      if (read > KEY_BYTES) break
    }
    text = Buffer.concat(chunks).subarray(0, KEY_BYTES).toString('utf8')
  }
  const key = text.trim()
  if (key === '') throw new Error(file === undefined ? 'stdin held no Klaviyo private key' : `${file} holds no Klaviyo private key`)
  return key
}

export function subscriptionsCommand(clock: Clock): Command {
  const command = new Command('subscriptions').description("outgoing webhooks: subscribe endpoints to a shop's change feed, list, remove, rotate, replay")

  command
    .command('add')
    .description(
      'subscribe an endpoint; its signing secret is printed once, on the last line. ' +
        'With --klaviyo, a Klaviyo account instead: its private key read from stdin or --klaviyo-key-file, never from an argument, and never shown again',
    )
    .requiredOption('--shop <name>', 'the shop', shopName)
    .option('--url <url>', 'the endpoint, http:// or https://')
    .option('--klaviyo', 'send events to a Klaviyo account instead of webhooks to --url (docs/integrate/klaviyo.md): its private key on stdin')
    .option('--klaviyo-key-file <path>', 'with --klaviyo: read the private key from this file rather than stdin')
    .option('--referral-url <url>', "with --klaviyo: the shop's referral page, which the profiles' referral links point at (?ref=<code>)")
    .requiredOption('--types <patterns>', 'feed types separated by commas: customer.deleted, points.* or *')
    .action((options: { shop: string; url?: string; klaviyo?: boolean; klaviyoKeyFile?: string; referralUrl?: string; types: string }) =>
      withBackend(async ({ db }) => {
        if (options.klaviyo && options.url !== undefined) throw new Error('choose one of --url and --klaviyo')
        if (!options.klaviyo && options.url === undefined) throw new Error('give --url (an endpoint for webhooks) or --klaviyo (a Klaviyo account)')
        if (!options.klaviyo && (options.klaviyoKeyFile !== undefined || options.referralUrl !== undefined)) {
          throw new Error('--klaviyo-key-file and --referral-url go with --klaviyo')
        }
        const [config, { createKlaviyoSubscription, createSubscription, destinationView, subscriptionProblems, subscriptionTextProblems }, { systemResolver }] =
          await Promise.all([settings(), feed(), import('../jobs/endpoint-guard.ts')])
        const shop = await shopOf(db, options.shop)
        const types = options.types.split(',').map((s) => s.trim())
        const cap = config.SUBSCRIPTIONS_PER_SHOP
        const limit = () => new Error(`shop ${shop.name} has ${cap} subscriptions, the most SUBSCRIPTIONS_PER_SHOP allows: remove one first`)
        if (options.klaviyo) {
          const privateKey = await klaviyoKey(options.klaviyoKeyFile)
          const klaviyo = { private_key: privateKey, ...(options.referralUrl === undefined ? {} : { referral_url: options.referralUrl }) }
          const problems = subscriptionTextProblems(undefined, types, klaviyo)
          if (problems.length > 0) throw new Error(problems.map((p) => p.detail).join('; '))
          const record = await createKlaviyoSubscription(db, await secretBox(config), {
            shopId: shop.id,
            privateKey,
            referralUrl: options.referralUrl ?? null,
            types,
            nowUs: clock.nowUs(),
            cap,
          })
          if (!record) throw limit()
          const shown = destinationView(record).klaviyo!
          await auditCommandLine(
            db,
            {
              action: 'subscription.create',
              shopId: shop.id,
              target: String(record.id),
              detail: { destination: 'klaviyo', private_key: shown.private_key, types: record.types },
            },
            clock.nowUs(),
          )
          console.log(
            `created subscription ${record.id} of shop ${shop.name}: events to Klaviyo (key ${shown.private_key}) for ${record.types.join(', ')}` +
              (shown.referral_url ? `, referral links to ${shown.referral_url}` : ''),
          )
          return
        }
        const problems = await subscriptionProblems(options.url!, types, config.SUBSCRIPTIONS_ALLOW_PRIVATE === 1, systemResolver)
        if (problems.length > 0) throw new Error(problems.map((p) => p.detail).join('; '))
        const created = await createSubscription(db, await secretBox(config), { shopId: shop.id, url: options.url!, types, nowUs: clock.nowUs(), cap })
        if (!created) throw limit()
        const { record, secret } = created
        await auditCommandLine(
          db,
          { action: 'subscription.create', shopId: shop.id, target: String(record.id), detail: { url: record.url, types: record.types } },
          clock.nowUs(),
        )
        console.log(
          `created subscription ${record.id} of shop ${shop.name} to ${record.url} for ${record.types.join(', ')}; its signing secret, not shown again:`,
        )
        console.log(secret)
      }),
    )

  command
    .command('list')
    .description("a shop's subscriptions: id, URL (or Klaviyo and its key, masked), types, status, position, last error (never a secret or a key)")
    .requiredOption('--shop <name>', 'the shop', shopName)
    .action((options: { shop: string }) =>
      withBackend(async ({ db }) => {
        const [config, { subscriptionView }, { klaviyoEventsUrl }] = await Promise.all([settings(), feed(), import('../config.ts')])
        const shop = await shopOf(db, options.shop)
        const now = clock.nowUs()
        const rows = (await shopSubscriptions(db, shop.id)).map((s) => subscriptionView(s, now, klaviyoEventsUrl(config)))
        printTable(
          rows.map((v) => ({
            id: String(v.id),
            url: v.klaviyo ? `klaviyo (key ${v.klaviyo.private_key})` : v.url,
            types: v.types.join(','),
            status: v.status,
            position: String(v.position),
            'last error': v.last_error ?? '',
          })),
          ['id', 'url', 'types', 'status', 'position', 'last error'],
        )
      }),
    )

  command
    .command('remove')
    .description('remove a subscription: nothing more is sent to it')
    .requiredOption('--shop <name>', 'the shop', shopName)
    .argument('<id>', 'the subscription id, as subscriptions list shows it', subscriptionId)
    .action((id: number, options: { shop: string }) =>
      withBackend(async ({ db }) => {
        const shop = await shopOf(db, options.shop)
        const sub = await findSubscription(db, shop.id, id)
        if (!sub || !(await deleteSubscription(db, id))) throw new Error(`no subscription ${id} of shop ${shop.name}; subscriptions list shows the ids`)
        const detail = sub.destination.kind === 'klaviyo' ? { destination: 'klaviyo', private_key: sub.destination.keyHint } : { url: sub.url }
        await auditCommandLine(db, { action: 'subscription.delete', shopId: shop.id, target: String(id), detail }, clock.nowUs())
        console.log(`removed subscription ${id} of shop ${shop.name}`)
      }),
    )

  command
    .command('rotate')
    .description('a new signing secret, printed once on the last line; the old one signs too for the grace period')
    .requiredOption('--shop <name>', 'the shop', shopName)
    .option('--grace-hours <hours>', 'hours the old secret keeps signing (default SUBSCRIPTIONS_ROTATION_GRACE_HOURS)', hours)
    .argument('<id>', 'the subscription id', subscriptionId)
    .action((id: number, options: { shop: string; graceHours?: number }) =>
      withBackend(async ({ db }) => {
        const [config, { rotateSecret }] = await Promise.all([settings(), feed()])
        const shop = await shopOf(db, options.shop)
        const sub = await findSubscription(db, shop.id, id)
        if (!sub) throw new Error(`no subscription ${id} of shop ${shop.name}; subscriptions list shows the ids`)
        if (sub.destination.kind === 'klaviyo') {
          throw new Error(
            `subscription ${id} sends to Klaviyo, which signs nothing: no secret to rotate (to change its key, add a new one, then remove this one)`,
          )
        }
        const grace = options.graceHours ?? config.SUBSCRIPTIONS_ROTATION_GRACE_HOURS
        const { secret, untilUs } = await rotateSecret(db, await secretBox(config), sub, grace, clock.nowUs())
        await auditCommandLine(db, { action: 'subscription.rotate', shopId: shop.id, target: String(id), detail: { grace_hours: grace } }, clock.nowUs())
        console.log(`rotated the secret of subscription ${id}; the previous one signs too until ${formatUs(untilUs)}; the new one, not shown again:`)
        console.log(secret)
      }),
    )

  command
    .command('replay')
    .description('deliver again every matching entry after a position; a failing or disabled subscription is active again')
    .requiredOption('--shop <name>', 'the shop', shopName)
    .requiredOption('--after <position>', 'the feed position to deliver after (0: from the start)', position)
    .argument('<id>', 'the subscription id', subscriptionId)
    .action((id: number, options: { shop: string; after: number }) =>
      withBackend(async ({ db }) => {
        const shop = await shopOf(db, options.shop)
        if (!(await findSubscription(db, shop.id, id))) throw new Error(`no subscription ${id} of shop ${shop.name}; subscriptions list shows the ids`)
        const { replayProblem } = await feed()
        const past = await replayProblem(db, shop.id, options.after)
        if (past) throw new Error(`--after: ${past.detail}`)
        await replaySubscription(db, id, options.after)
        await auditCommandLine(db, { action: 'subscription.replay', shopId: shop.id, target: String(id), detail: { after: options.after } }, clock.nowUs())
        console.log(`subscription ${id} delivers again from after position ${options.after}`)
      }),
    )

  return command
}
