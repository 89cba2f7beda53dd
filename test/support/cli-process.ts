import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { ConfigSchema } from '../../src/config.ts'

// The real CLI in a child process, as an operator runs it.

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/** Every setting the service reads: the configuration schema is the one list. */
export const CONFIG_NAMES = Object.keys(ConfigSchema.properties)

/**
 * A child's environment: the test's, without the test runner's context, any setting (or `send`
 * target) of the developer's shell, then `env`.
 */
export function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env }
  for (const name of ['NODE_TEST_CONTEXT', 'SHOP_INTAKE_URL', 'SHOP_INTAKE_KEY', ...CONFIG_NAMES]) delete base[name]
  return { ...base, ...env }
}

export interface CliRun {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

/**
 * The line a command that opens the database starts its stderr with (src/cli/backend.ts), such
 * as `database: sqlite:data/shop-intake.db`.
 */
export const DATABASE_LINE = /^database: (.*)$/m

/** What a command said on stderr besides the database line: its reason for failing, its progress. */
export const besidesDatabase = (stderr: string): string => stderr.replace(/^database: .*\n/m, '')

/** Starts `shop-intake ARGS` with `env` as its only settings and `stdin` as its input, in the package's folder or `cwd`. */
export function startCli(
  args: string[],
  env: Record<string, string> = {},
  stdin = '',
  cwd = ROOT,
): { child: ChildProcess; done: Promise<CliRun>; stderr(): string } {
  const child = spawn(process.execPath, [`${ROOT}bin/shop-intake.js`, ...args], { cwd, env: childEnv(env), stdio: ['pipe', 'pipe', 'pipe'] })
  child.stdin!.end(stdin)
  let stdout = ''
  let stderr = ''
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const done = new Promise<CliRun>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }))
  })
  return { child, done, stderr: () => stderr }
}

/** Runs a CLI command to completion (SIGKILLed after `limitMs`, which then fails the caller's test). */
export async function runCli(args: string[], env: Record<string, string> = {}, stdin = '', limitMs = 120_000, cwd = ROOT): Promise<CliRun> {
  const { child, done } = startCli(args, env, stdin, cwd)
  const guard = setTimeout(() => child.kill('SIGKILL'), limitMs)
  try {
    return await done
  } finally {
    clearTimeout(guard)
  }
}
