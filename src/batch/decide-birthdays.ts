import { UTC } from '../domain/calendar.ts'
import { birthdayDue, customerChange, type StoredBirthday } from '../loyalty/birthdays.ts'
import { DEFAULT_RULE } from '../loyalty/rule.ts'
import type { BirthdayCommand, BirthdaySetCommand, CommandOutcome } from './commands.ts'
import { keyOf, type BatchState, type BirthdayReward } from './state.ts'

// Birthdays on the write path (docs/program/birthdays.md): a birthday set, and a birthday paid,
// decided from the stored birthday, the years already paid, the shop's rule and time zone and the
// command's instant. Pure: decideBirthday returns what it decided and changes nothing it is given;
// src/batch/decide-points.ts writes it into its scratch and the ledger, after the customer was
// found live. The year paid is the key of exactly once (birthday_rewards, migration 0040): a
// second batch that decides the same year finds the row and runs again, paying nothing.

/** What a birthday command decided: its answer, the birthday to store, and the birthday to pay. */
export interface BirthdayDecided {
  outcome: CommandOutcome
  birthday: StoredBirthday | null
  reward: BirthdayReward | null
}

/** The birthdays and the years paid as the batch holds them (stored, then decided). */
export type BirthdayBook = Pick<BatchState, 'rules' | 'timeZones'> & {
  birthdays: ReadonlyMap<string, StoredBirthday>
  birthdayYears: ReadonlyMap<string, readonly number[]>
}

/** The birthday command `c` of a live customer, decided over `book`. */
export function decideBirthday(book: BirthdayBook, c: BirthdayCommand | BirthdaySetCommand): BirthdayDecided {
  const key = keyOf(c.shopId, c.customerId)
  const zone = book.timeZones.get(c.shopId) ?? UTC
  const points = (book.rules.get(c.shopId)?.rule ?? DEFAULT_RULE).birthday_points
  const stored = book.birthdays.get(key)
  const paid = book.birthdayYears.get(key) ?? []
  const pay = (b: StoredBirthday): BirthdayReward | null => {
    if (points === 0) return null
    const year = birthdayDue(zone, c.atUs, b, paid)
    return year === null ? null : { shopId: c.shopId, customerId: c.customerId, year, points, paidUs: c.atUs }
  }
  if (c.command === 'birthday') {
    const reward = stored ? pay(stored) : null
    return { outcome: { status: 'birthday-paid', points: reward?.points ?? 0 }, birthday: null, reward }
  }
  const next = { month: c.month, day: c.day }
  const same = stored !== undefined && stored.month === c.month && stored.day === c.day
  if (c.source === 'customer') {
    const change = customerChange(zone, c.atUs, stored, next)
    if (!change.allowed) return { outcome: { status: 'birthday-refused', from: change.from }, birthday: null, reward: null }
  }
  // The same birthday again changes nothing: neither who set it nor when (the 30 days and 365 days count from the change).
  const birthday: StoredBirthday | null = same
    ? null
    : { ...next, source: c.source, setUs: c.atUs, customerSetUs: c.source === 'customer' ? c.atUs : (stored?.customerSetUs ?? null) }
  const reward = pay(birthday ?? stored!)
  return { outcome: { status: 'birthday-set', birthday: next, changed: !same, paid: reward?.points ?? 0 }, birthday, reward }
}
