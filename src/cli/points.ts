import { Command } from 'commander'
import { findShop } from '../store/keys-repo.ts'
import { withBackend } from './backend.ts'
import { shopName } from './keys.ts'

export function pointsCommand(): Command {
  const points = new Command('points').description('the points ledger')
  points
    .command('rebuild')
    .description('recompute every order\'s points from its stored state and the current rule; append only the corrections')
    .option('--shop <name>', 'only this shop', shopName)
    .action((options: { shop?: string }) =>
      withBackend(async (backend) => {
        const [{ default: cliProgress }, { rebuildPoints }] = await Promise.all([import('cli-progress'), import('../loyalty/rebuild.ts')])
        let shopIds: number[]
        if (options.shop !== undefined) {
          const shop = await findShop(backend.db, options.shop)
          if (!shop) throw new Error(`no shop named ${options.shop}`)
          shopIds = [shop.id]
        } else {
          shopIds = (await backend.db.selectFrom('shops').select('id').orderBy('id').execute()).map((r) => r.id)
        }
        const bar = new cliProgress.SingleBar(
          { format: 'rebuilding points |{bar}| {value}/{total} orders | {appended} corrections', stream: process.stderr },
          cliProgress.Presets.shades_classic,
        )
        let started = false
        const result = await rebuildPoints(backend, shopIds, (p) => {
          if (!started) {
            bar.start(p.total, 0, { appended: 0 })
            started = true
          }
          bar.update(p.done, { appended: p.appended })
        })
        bar.stop()
        console.log(`checked ${result.done} orders; appended ${result.appended} ledger entr${result.appended === 1 ? 'y' : 'ies'}`)
      }),
    )
  return points
}
