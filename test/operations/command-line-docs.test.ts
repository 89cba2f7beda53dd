import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import type { Command } from 'commander'
import { systemClock } from '../../src/clock.ts'
import { commandLine } from '../../src/cli/program.ts'

// docs/operate/command-line.md names every command of the CLI and every option of each, in that
// command's own row of the table or its own section, and no option the command does not have: the
// command line itself (src/cli/program.ts, as main.ts runs it) is the list.

const PAGE = readFileSync(new URL('../../docs/operate/command-line.md', import.meta.url), 'utf8')

/** Every command that runs something (no subcommands), with its path: `keys create`. */
function leaves(command: Command, path: string[] = []): { path: string; command: Command }[] {
  if (command.commands.length === 0) return [{ path: path.join(' '), command }]
  return command.commands.flatMap((sub) => leaves(sub, [...path, sub.name()]))
}

/**
 * What the page says about one command: its row of the table (the first cell starts with it), and
 * any section whose heading names it in backticks, up to the next heading.
 */
function partOf(path: string): string {
  const lines = PAGE.split('\n')
  const part: string[] = []
  const rowStart = new RegExp(`^\\| \`${path}( |\`)`)
  const heading = new RegExp(`^#{2,4} .*\`${path}( [^\`]*)?\``)
  for (let i = 0; i < lines.length; i++) {
    if (rowStart.test(lines[i]!)) part.push(lines[i]!)
    if (heading.test(lines[i]!)) {
      for (let j = i; j < lines.length && (j === i || !/^#{1,4} /.test(lines[j]!)); j++) part.push(lines[j]!)
    }
  }
  return part.join('\n')
}

const flag = (name: string) => new RegExp(`(?<![\\w-])${name}(?![\\w-])`)

test('the command-line page names every command and every option of each in its own part, and only options it has', () => {
  const program = commandLine(systemClock())
  const commands = leaves(program)
  assert.ok(commands.length > 20, `the CLI's commands were found: ${commands.map((c) => c.path).join(', ')}`)
  const faults: string[] = []
  for (const { path, command } of commands) {
    const part = partOf(path)
    if (part === '') {
      faults.push(`${path}: no row of the table and no section names it`)
      continue
    }
    const options = command.options.map((o) => o.long!).filter((long) => long !== undefined)
    for (const option of options) if (!flag(option).test(part)) faults.push(`${path}: ${option} is not on its row or in its section`)
    for (const named of new Set(part.match(/(?<![\w-])--[a-z][\w-]*/g) ?? [])) {
      if (named !== '--help' && !options.includes(named)) faults.push(`${path}: the page gives it ${named}, which it does not take`)
    }
  }
  for (const option of program.options) if (!flag(option.long!).test(PAGE)) faults.push(`shop-intake: ${option.long} is not on the page`)
  assert.deepEqual(faults, [], `docs/operate/command-line.md:\n${faults.join('\n')}`)
})
