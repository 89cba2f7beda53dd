import { CommanderError } from 'commander'
import { systemClock } from '../clock.ts'
import { commandLine } from './program.ts'

// The command line's one clock, as buildApp makes the service's: every command reads the time from it.
const program = commandLine(systemClock())

try {
  await program.parseAsync(process.argv)
} catch (err) {
  if (err instanceof CommanderError) process.exit(err.exitCode)
  // One line, no stack: the reason is for the operator, not a developer.
  console.error(`shop-intake: ${(err as Error).message || String(err)}`)
  process.exit(1)
}
