import type { BatchState } from '../batch/state.ts'
import { keyOf } from '../batch/state.ts'
import { BIRTHDAY_SOURCES, type BirthdaySource } from '../loyalty/birthdays.ts'
import type { Session } from '../db/dialect.ts'
import type { BatchStatements } from './statements.ts'

// What a batch's birthday commands decide from (src/batch/decide-birthdays.ts): the birthdays of
// their customers and the years each was paid, read under the customers' locks (src/write/load.ts).

export async function loadBirthdays(s: Session, q: BatchStatements, state: BatchState, shopId: number, customerIds: readonly number[]): Promise<void> {
  const [birthdays, years] = await s.runMany([q.birthdays(shopId, customerIds), q.birthdayYears(shopId, customerIds)] as const)
  state.birthdays ??= new Map()
  state.birthdayYears ??= new Map()
  for (const row of birthdays) {
    const source = BIRTHDAY_SOURCES.includes(row.source as BirthdaySource) ? (row.source as BirthdaySource) : 'shop'
    state.birthdays.set(keyOf(shopId, Number(row.customer_id)), {
      month: Number(row.month),
      day: Number(row.day),
      source,
      setUs: Number(row.set_us),
      customerSetUs: row.customer_set_us === null ? null : Number(row.customer_set_us),
    })
  }
  for (const row of years) {
    const key = keyOf(shopId, Number(row.customer_id))
    state.birthdayYears.set(key, [...(state.birthdayYears.get(key) ?? []), Number(row.year)])
  }
}
