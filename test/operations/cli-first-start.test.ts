import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { after, test } from 'node:test'
import { childEnv } from '../support/cli-process.ts'

// The first start on a fresh database: the JSON log line says what to do next, and a person at a
// terminal also reads the next steps as plain text on stderr (under `script`, which gives the
// server a terminal). Without a terminal only the log line is written.

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'shop-intake-first-start-'))
after(() => rmSync(dir, { recursive: true, force: true }))

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })

/** Starts `serve` (under a terminal if `tty`) until its output holds `until`, then stops it; its output. */
async function firstStart(name: string, tty: boolean, until: RegExp): Promise<string> {
  const env = childEnv({ DATABASE_URL: `sqlite:${join(dir, `${name}.db`)}`, PORT: String(await freePort()), HOST: '127.0.0.1', LOG_LEVEL: 'info' })
  const command = `${JSON.stringify(process.execPath)} bin/shop-intake.js serve`
  const child = tty
    ? spawn('script', ['-qfec', command, '/dev/null'], { cwd: ROOT, env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] })
    : spawn(process.execPath, ['bin/shop-intake.js', 'serve'], { cwd: ROOT, env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] })
  let output = ''
  let stderr = ''
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()))
  const deadline = Date.now() + 90_000
  try {
    while (!until.test(output + stderr) && Date.now() < deadline && child.exitCode === null) await new Promise((r) => setTimeout(r, 100))
    // A moment more: anything written after the line waited for is in too.
    await new Promise((r) => setTimeout(r, 300))
  } finally {
    try {
      process.kill(-child.pid!, 'SIGTERM')
    } catch {
      // gone already
    }
    await exited
  }
  // A terminal ends its lines with CR LF.
  return tty ? output.replace(/\r\n/g, '\n') : `${output}\n--- stderr ---\n${stderr}`
}

test('on a terminal, the first start prints its next steps as plain text besides the log line', async () => {
  const out = await firstStart('tty', true, /Next steps:[\s\S]*Read it back/)
  assert.match(out, /"msg":"no shop exists yet/, 'the JSON log line stays')
  assert.match(out, /\n {2}1\. Create a shop and its API key[^\n]*\n {7}npx shop-intake keys create --shop default\n/)
  assert.match(out, /2\. Send webhooks to http:\/\/127\.0\.0\.1:\d+\/v3\/hook\/radix\/vanilla\/<topic>/)
})

test('without a terminal, the log line alone', async () => {
  const out = await firstStart('pipe', false, /no shop exists yet/)
  assert.match(out, /"msg":"no shop exists yet/)
  assert.doesNotMatch(out, /Next steps:/)
})
