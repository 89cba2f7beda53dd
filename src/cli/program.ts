import { createRequire } from 'node:module'
import { Command } from 'commander'
import { keysCommand } from './keys.ts'
import { adminsCommand } from './admins.ts'
import { pointsCommand } from './points.ts'
import { rulesCommand } from './rules.ts'
import { retentionCommands } from './retention.ts'
import { sendCommand } from './send.ts'
import { subscriptionsCommand } from './subscriptions.ts'
import { verifyCommand } from './verify.ts'
import { rewardsCommand } from './rewards.ts'
import { shopsCommand } from './shops.ts'
import { withBackend } from './backend.ts'
import type { Clock } from '../clock.ts'
import { PACKAGE_ROOT } from '../package-root.ts'

// The server and the database drivers are imported when a command needs them, so that --help,
// --version and a bad argument answer at once.

/**
 * The `shop-intake` command with all its subcommands, their options and their help, on `clock`
 * (main.ts runs it; the docs' test walks it, so that docs/operate/command-line.md names every option).
 */
export function commandLine(clock: Clock): Command {
  const program = new Command()
    .name('shop-intake')
    .description('Webhook intake for shop customer and order events, with a loyalty points ledger.')
    .version((createRequire(PACKAGE_ROOT)('./package.json') as { version: string }).version)
    .exitOverride()

  program
    .command('serve')
    .description('apply pending migrations, then serve HTTP (DATABASE_URL, PORT, HOST, WORKERS; see README)')
    .action(async () => {
      const [{ loadConfig }, { serve }] = await Promise.all([import('../config.ts'), import('../cluster.ts')])
      await serve(loadConfig())
    })

  program
    .command('migrate')
    .description('apply pending database migrations')
    .action(() =>
      withBackend(
        async (backend) => {
          const { migrate } = await import('../db/database.ts')
          const applied = await migrate(backend)
          console.log(applied.length ? `applied ${applied.join(', ')}` : 'the database is up to date')
        },
        { migrate: false },
      ),
    )

  program.addCommand(keysCommand(clock))
  program.addCommand(adminsCommand(clock))
  program.addCommand(shopsCommand(clock))
  program.addCommand(rulesCommand(clock))
  program.addCommand(pointsCommand(clock))
  for (const command of retentionCommands(clock)) program.addCommand(command)
  program.addCommand(sendCommand(clock))
  program.addCommand(subscriptionsCommand(clock))
  program.addCommand(rewardsCommand(clock))
  program.addCommand(verifyCommand(clock))
  return program
}
