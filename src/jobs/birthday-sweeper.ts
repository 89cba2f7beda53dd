import type { Clock } from '../clock.ts'
import type { BatchItem, BirthdayCommand } from '../batch/commands.ts'
import { localDate } from '../domain/calendar.ts'
import { birthdaysOnDate } from '../loyalty/birthdays.ts'
import { parseStoredRule } from '../loyalty/rule.ts'
import { birthdayRules, birthdaysOn } from '../repos/birthdays-repo.ts'
import type { Backend } from '../db/dialect.ts'
import type { BatchResult } from '../write/unit-of-work.ts'
import { startLoop } from './loop.ts'
import type { Report } from './report.ts'

// Pays birthdays (docs/program/birthdays.md): every pass (SWEEP_INTERVAL_SECONDS, 20 s by default,
// so within a minute of a shop's local midnight), in each shop whose rule pays birthdays, finds the
// customers whose birthday is the shop's today and who were not paid this year, and sends a
// birthday command for each through the writer. The decider pays or not under the customer's lock,
// and the year paid is a key of the database (birthday_rewards): several processes sweeping at
// once, a restart, a crash mid-pass or a customer found twice never pay a year twice.

/** Customers sent to the writer at once: the rest wait, so a backlog never fills the write queue. */
const CHUNK = 500

export interface BirthdaySweeper {
  /** One pass now; resolves when every command it sent is committed. Returns the birthdays it paid. */
  sweep(): Promise<number>
  stop(): Promise<void>
}

export function startBirthdaySweeper(
  backend: Backend,
  submit: (item: BatchItem) => Promise<BatchResult>,
  clock: Clock,
  everyMs: number,
  report: Report,
): BirthdaySweeper {
  /** Customers decided today with nothing to pay (a birthday the customer set too late), by `${shopId}:${customerId}:${date}`: not sent again that day. */
  let unpaid = new Set<string>()
  let unpaidDate = ''

  async function pass(): Promise<number> {
    const nowUs = clock.nowUs()
    let paid = 0
    for (const shop of await birthdayRules(backend.db)) {
      if (parseStoredRule(shop.rule).birthday_points === 0) continue
      const today = localDate(shop.timeZone, nowUs)
      if (today !== unpaidDate) [unpaid, unpaidDate] = [new Set(), today]
      const year = Number(today.slice(0, 4))
      const customers = (await birthdaysOn(backend.db, shop.shopId, birthdaysOnDate(today), year)).filter((id) => !unpaid.has(`${shop.shopId}:${id}:${today}`))
      for (let i = 0; i < customers.length; i += CHUNK) {
        const chunk = customers.slice(i, i + CHUNK)
        const results = await Promise.all(
          chunk.map((customerId) => submit({ command: 'birthday', shopId: shop.shopId, customerId, atUs: nowUs } satisfies BirthdayCommand)),
        )
        for (const [j, r] of results.entries()) {
          if (r.status === 'failed') throw r.error
          if (r.status === 'birthday-paid' && r.points > 0) paid++
          else unpaid.add(`${shop.shopId}:${chunk[j]}:${today}`)
        }
      }
    }
    return paid
  }

  const loop = startLoop({
    pass,
    everyMs,
    ...(everyMs > 0 ? { firstMs: Math.min(everyMs, 1000) } : {}),
    report,
    failure: 'the birthday sweep failed; the next one tries again',
    clock,
  })
  return { sweep: loop.run, stop: loop.stop }
}
