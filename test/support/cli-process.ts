import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'

// The real CLI in a child process, as an operator runs it.

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

export interface CliRun {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

/** Starts `shop-intake ARGS` with only `env` of the service's settings. */
export function startCli(args: string[], env: Record<string, string>): { child: ChildProcess; done: Promise<CliRun>; stderr(): string } {
  const base: NodeJS.ProcessEnv = { ...process.env }
  for (const name of Object.keys(base)) if (name === 'NODE_TEST_CONTEXT' || /^[A-Z_]+$/.test(name) && name.match(/^(DATABASE_URL|PORT|HOST|LOG_LEVEL|EVENT_RETENTION_DAYS|PRUNE_INTERVAL_SECONDS|STORAGE_SAMPLE_SECONDS)$/)) delete base[name]
  const child = spawn(process.execPath, ['bin/shop-intake.js', ...args], { cwd: ROOT, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
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
export async function runCli(args: string[], env: Record<string, string>, limitMs = 120_000): Promise<CliRun> {
  const { child, done } = startCli(args, env)
  const guard = setTimeout(() => child.kill('SIGKILL'), limitMs)
  try {
    return await done
  } finally {
    clearTimeout(guard)
  }
}
