import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { parseProgram } from '../loyalty/program.ts'
import { normalizeRule } from '../loyalty/rule.ts'
import { referralEmailHash } from '../loyalty/referrals.ts'
import { customerHook, DeciderSpecification, orderHook } from '../../test/support/decider.ts'
import type { ReferralClaimCommand } from './commands.ts'
import { emptyState, keyOf, referralKeyOf, type BatchState } from './state.ts'

// The monthly cap in the decider counts the months of the shop's time zone, as the load found it
// (state.timeZones), through src/domain/calendar.ts (src/batch/decide-referrals.ts).

const KEY = Buffer.alloc(32, 3)
const FRIENDS = ['bo@example.com', 'cy@example.com']
const hash = (email: string) => referralEmailHash(KEY, 1, email)
/** 11:30 and 12:30 UTC on 31 May 2024: one month in UTC; 23:30 on 31 May and 00:30 on 1 June in Auckland (UTC+12). */
const ORDERS_AT = [Date.UTC(2024, 4, 31, 11, 30), Date.UTC(2024, 4, 31, 12, 30)]

/** Shop 1 with referrals (500 points, a cap of 1 a month), in `zone` (none: the load found no zone, UTC). */
function shop(zone: string | null): () => BatchState {
  return () => {
    const state = emptyState()
    const rule = normalizeRule({ pending_days: 0, referral_points: 500, referral_min_subtotal: '0.00', referral_days: 30, referral_cap_per_month: 1 })
    state.rules.set(1, { rule, version: 1 })
    state.programs.set(1, parseProgram(null, rule))
    if (zone !== null) state.timeZones.set(1, zone)
    for (const e of [...FRIENDS, 'ada@example.com']) state.referralHashes.set(keyOf(1, e), hash(e))
    return state
  }
}
const claim = (email: string): ReferralClaimCommand => ({
  command: 'referral-claim',
  shopId: 1,
  customerId: 1,
  referralId: `r-${email.slice(0, 2)}`,
  emailHash: hash(email),
  emails: [email],
  random: 'ABCDEFGHJKLMN',
  atUs: Date.UTC(2024, 4, 20) * 1000,
})
const order = (i: number) =>
  orderHook({
    id: 10 + i,
    email: FRIENDS[i],
    currency: 'EUR',
    subtotal: '80.00',
    is_paid: true,
    processed_at: new Date(ORDERS_AT[i]!).toISOString(),
    updated_at: new Date(ORDERS_AT[i]!).toISOString(),
  })
const reasons = (state: BatchState) => FRIENDS.map((e) => state.referrals.get(referralKeyOf(1, hash(e), 1))?.reason)

describe('the monthly cap in the shop’s time zone', () => {
  for (const [zone, want] of [
    ['Pacific/Auckland', ['rewarded', 'rewarded']],
    ['UTC', ['rewarded', 'cap_reached']],
    [null, ['rewarded', 'cap_reached']],
  ] as const) {
    test(`given a shop in ${zone ?? 'no zone (UTC)'} and a cap of 1, when two first orders come an hour apart on 31 May, then ${want.join(' and ')}`, () => {
      DeciderSpecification.for(shop(zone))
        .given([customerHook({ id: 1, email: 'ada@example.com' })], FRIENDS.map(claim))
        .when([order(0), order(1)])
        .then((d, state) => {
          assert.deepEqual(reasons(state), want)
          assert.equal(d.ledger.filter((e) => e.orderId === null && e.reason === 'referral').length, want.filter((w) => w === 'rewarded').length)
        })
    })
  }
})
