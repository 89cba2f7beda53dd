import type { Clock } from '../clock.ts'
import { readFileSync } from 'node:fs'
import { Command, InvalidArgumentError } from 'commander'
import { verifyProblem } from '../domain/webhook-signature.ts'

// `shop-intake verify`: what a receiving developer runs to check an outgoing webhook by hand
// (Standard Webhooks): the secret, the three headers and the body exactly as received.

function seconds(value: string): number {
  if (!/^\d{1,7}$/.test(value)) throw new InvalidArgumentError('a number of seconds')
  return Number(value)
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

export function verifyCommand(clock: Clock): Command {
  return new Command('verify')
    .description('check the signature of a webhook this service sent: exit 0 and "valid", or exit 1 and why not')
    .option('--secret <whsec>', 'the signing secret (or WEBHOOK_SECRET, which keeps it out of the shell history)')
    .requiredOption('--id <id>', 'the webhook-id header')
    .requiredOption('--timestamp <seconds>', 'the webhook-timestamp header')
    .requiredOption('--signature <signatures>', 'the webhook-signature header, as received (v1,… separated by spaces)')
    .option('--body <file>', 'the body, byte for byte as received; without it, read from stdin')
    .option('--tolerance <seconds>', 'how far the timestamp may be from now', seconds, 300)
    .action(async (options: { secret?: string; id: string; timestamp: string; signature: string; body?: string; tolerance: number }) => {
      const secret = options.secret ?? process.env.WEBHOOK_SECRET
      if (!secret) throw new Error('give the secret with --secret or WEBHOOK_SECRET')
      const body = options.body === undefined ? await readStdin() : readFileSync(options.body, 'utf8')
      const why = verifyProblem(
        secret,
        { id: options.id, timestamp: options.timestamp, signature: options.signature, body },
        Math.floor(clock.nowMs() / 1000),
        options.tolerance,
      )
      if (why) throw new Error(`not valid: ${why}`)
      console.log('valid: the signature matches the secret, and the timestamp is within the tolerance')
    })
}
