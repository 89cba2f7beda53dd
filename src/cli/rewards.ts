import type { Clock } from '../clock.ts'
import { readFileSync } from 'node:fs'
import { Command, InvalidArgumentError } from 'commander'
import { readCodes } from '../loyalty/rewards.ts'
import type { RewardInput } from '../rewards/catalogue.ts'
import { findShop } from '../repos/keys-repo.ts'
import type { Tables } from '../db/tables.ts'
import type { Kysely } from 'kysely'
import { auditCommandLine } from './audit.ts'
import { withBackend } from './backend.ts'
import { printTable, shopName } from './keys.ts'

// `shop-intake rewards`: the rewards catalogue and its pools from the command line, as the admin
// API keeps them (docs/program/rewards.md), checked by the same schema and rules, audited the same way.
// The catalogue, its schema and the repository are imported when a command runs, not for --help.

const catalogue = () => import('../rewards/catalogue.ts')
const repo = () => import('../repos/rewards-repo.ts')

function rewardId(value: string): number {
  if (!/^[1-9]\d{0,15}$/.test(value) || !Number.isSafeInteger(Number(value)))
    throw new InvalidArgumentError('a reward id is a whole number, as rewards list shows it')
  return Number(value)
}

async function shopOf(db: Kysely<Tables>, name: string) {
  const shop = await findShop(db, name)
  if (!shop) throw new Error(`no shop named ${name}`)
  return { id: Number(shop.id), name: shop.name }
}

export function rewardsCommand(clock: Clock): Command {
  const command = new Command('rewards').description('the rewards catalogue: add, list, remove, and the codes of a pool')

  command
    .command('add')
    .description('add a reward to the catalogue')
    .requiredOption('--shop <name>', 'the shop', shopName)
    .requiredOption('--name <name>', "the reward's name")
    .requiredOption('--points <n>', 'what a claim costs')
    .requiredOption('--kind <kind>', 'fixed_amount, percentage, free_shipping or custom')
    .option('--value <value>', 'fixed_amount: an amount such as 5.00; percentage: 1 to 100')
    .option('--currency <code>', 'fixed_amount: a currency such as EUR')
    .option('--codes <source>', 'generated (default) or pool')
    .option('--code-prefix <prefix>', 'put before each generated code')
    .option('--min-tier <tier>', 'the lowest tier that may claim it')
    .option('--inactive', 'add it inactive: no claim takes it until it is changed')
    .action(
      (options: {
        shop: string
        name: string
        points: string
        kind: string
        value?: string
        currency?: string
        codes?: string
        codePrefix?: string
        minTier?: string
        inactive?: boolean
      }) =>
        withBackend(async ({ db }) => {
          const [{ createReward, newRewardProblems, rewardView, shopTiers }, { checkValue }, { RewardBody }] = await Promise.all([
            catalogue(),
            import('../http/validation.ts'),
            import('../schemas/rewards.ts'),
          ])
          const shop = await shopOf(db, options.shop)
          const body: Record<string, unknown> = {
            name: options.name,
            points: /^\d{1,16}$/.test(options.points) ? Number(options.points) : options.points,
            kind: options.kind,
            codes: options.codes ?? 'generated',
            ...(options.value === undefined
              ? {}
              : { value: options.kind === 'percentage' && /^\d{1,3}$/.test(options.value) ? Number(options.value) : options.value }),
            ...(options.currency === undefined ? {} : { currency: options.currency }),
            ...(options.codePrefix === undefined ? {} : { code_prefix: options.codePrefix }),
            ...(options.minTier === undefined ? {} : { min_tier: options.minTier }),
            ...(options.inactive ? { active: false } : {}),
          }
          const flag = (pointer: string) => `--${pointer.slice(1).replace(/_/g, '-')}`
          const problems = [...checkValue(RewardBody, body), ...newRewardProblems(body, await shopTiers(db, shop.id))]
          const seen = new Set<string>()
          const shown = problems.filter((p) => !seen.has(p.pointer) && seen.add(p.pointer))
          if (shown.length > 0) throw new Error(shown.map((p) => `${flag(p.pointer)} ${p.detail}`).join('; '))
          const view = rewardView(await createReward(db, shop.id, body as RewardInput, clock.nowUs()))
          await auditCommandLine(
            db,
            { action: 'reward.create', shopId: shop.id, target: String(view.id), detail: { name: view.name, points: view.points } },
            clock.nowUs(),
          )
          console.log(
            `added reward ${view.id} of shop ${shop.name}: ${view.name}, ${view.points} points, ${view.codes} codes${view.active ? '' : ', inactive'}`,
          )
        }),
    )

  command
    .command('list')
    .description("a shop's rewards: id, name, points, kind, value, codes, codes left, min tier, active")
    .requiredOption('--shop <name>', 'the shop', shopName)
    .action((options: { shop: string }) =>
      withBackend(async ({ db }) => {
        const [{ rewardView }, { shopRewards }] = await Promise.all([catalogue(), repo()])
        const shop = await shopOf(db, options.shop)
        const rows = (await shopRewards(db, shop.id)).map(rewardView)
        if (rows.length === 0) {
          console.log(`shop ${shop.name} has no rewards`)
          return
        }
        printTable(
          rows.map((v) => ({
            id: String(v.id),
            name: v.name,
            points: String(v.points),
            kind: v.kind,
            value: v.value === null ? '-' : `${v.value}${v.kind === 'percentage' ? '%' : ` ${v.currency}`}`,
            codes: v.codes,
            left: v.codes_left === null ? '-' : String(v.codes_left),
            'min tier': v.min_tier ?? '-',
            active: v.active ? 'yes' : 'no',
          })),
          ['id', 'name', 'points', 'kind', 'value', 'codes', 'left', 'min tier', 'active'],
        )
      }),
    )

  command
    .command('remove')
    .description('remove a reward: it is made inactive, never erased, so that past claims still name it')
    .requiredOption('--shop <name>', 'the shop', shopName)
    .argument('<id>', "the reward's id", rewardId)
    .action((id: number, options: { shop: string }) =>
      withBackend(async ({ db }) => {
        const { changeReward, findReward } = await catalogue()
        const shop = await shopOf(db, options.shop)
        const reward = await findReward(db, shop.id, id)
        if (!reward) throw new Error(`no reward ${id} in shop ${shop.name}`)
        if (Number(reward.active) === 0) {
          console.log(`reward ${id} of shop ${shop.name} was removed already`)
          return
        }
        await changeReward(db, reward, { active: false }, clock.nowUs())
        await auditCommandLine(db, { action: 'reward.remove', shopId: shop.id, target: String(id), detail: { name: reward.name } }, clock.nowUs())
        console.log(`removed reward ${id} of shop ${shop.name}: no claim takes it from now on; its claims and codes are kept`)
      }),
    )

  const codes = new Command('codes').description("the codes of a reward's pool")
  codes
    .command('import')
    .description("add the codes of a file (one a line) to a reward's pool, in their order; duplicates (codes the shop holds or handed out) are left out")
    .requiredOption('--shop <name>', 'the shop', shopName)
    .requiredOption('--reward <id>', "the reward's id", rewardId)
    .requiredOption('--file <path>', 'the codes, one a line (a first line "code" is a header)')
    .action((options: { shop: string; reward: number; file: string }) =>
      withBackend(async ({ db }) => {
        const read = readCodes(readFileSync(options.file, 'utf8'))
        if ('detail' in read) throw new Error(`${read.line === 0 ? 'the file' : `line ${read.line}`}: ${read.detail}`)
        const list = read.codes
        const [{ findReward }, { addCodes }] = await Promise.all([catalogue(), repo()])
        const shop = await shopOf(db, options.shop)
        const reward = await findReward(db, shop.id, options.reward)
        if (!reward) throw new Error(`no reward ${options.reward} in shop ${shop.name}`)
        if (reward.codes !== 'pool') throw new Error(`reward ${options.reward} makes its own codes (codes: generated); only a pool takes uploaded codes`)
        const result = (await addCodes(db, shop.id, options.reward, list, clock.nowUs()))!
        await auditCommandLine(
          db,
          {
            action: 'reward.codes',
            shopId: shop.id,
            target: String(options.reward),
            detail: { added: result.added, duplicates: result.duplicates, handed_out: result.handedOut },
          },
          clock.nowUs(),
        )
        const handedOut = result.handedOut === 0 ? '' : ` (${result.handedOut} of them handed out by claims already)`
        console.log(
          `added ${result.added} codes to reward ${options.reward} of shop ${shop.name}; ${result.duplicates} duplicates left out${handedOut}; ${result.codesLeft} codes left`,
        )
      }),
    )
  command.addCommand(codes)
  return command
}
