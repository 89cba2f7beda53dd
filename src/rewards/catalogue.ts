import type { Kysely } from 'kysely'
import type { Static } from 'typebox'
import { fromMinor, MONEY_PATTERN, toMinor } from '../domain/money.ts'
import { formatUs } from '../domain/time.ts'
import { tierNamesOf, type CodeSource, type RewardKind } from '../loyalty/rewards.ts'
import { claimView } from '../batch/decide-rewards.ts'
import { storedClaim } from '../db/claim-rows.ts'
import type { ClaimView, RewardBody, RewardPatch, RewardView, ShopRewardView } from '../schemas/rewards.ts'
import { readRule } from '../repos/rule-repo.ts'
import { findReward, insertReward, updateReward, type ClaimRow, type RewardRow } from '../repos/rewards-repo.ts'
import type { RewardsTable, Tables } from '../db/tables.ts'

// The rewards catalogue: what the admin API and the command line share. A reward's fields as the
// schema takes them (src/schemas/rewards.ts), the rules the schema cannot say (which kind takes a
// value and a currency, which tiers the shop has), its row and its views.

export interface FieldProblem {
  pointer: string
  detail: string
}

export type RewardInput = Static<typeof RewardBody>
export type RewardChanges = Static<typeof RewardPatch>

/** A reward's fields after a change: the stored ones with the changed ones over them. */
interface Fields {
  kind: RewardKind
  value: string | number | null
  currency: string | null
  min_tier: string | null
}

/** The tier names of the shop's rule (none while it has no tiers). */
export async function shopTiers(db: Kysely<Tables>, shopId: number): Promise<string[]> {
  const { rule } = await readRule(db, shopId)
  return rule === null ? [] : tierNamesOf(JSON.parse(rule))
}

const MONEY = new RegExp(MONEY_PATTERN)
/** A JSON number's own digits: at most 13 before the point and 2 after (String() of 1e21 or 0.001 is refused). */
const AMOUNT_NUMBER = /^(0|[1-9][0-9]{0,12})(\.[0-9]{1,2})?$/
const PERCENT_TEXT = /^(100|[1-9][0-9]?)$/

/** A fixed amount's minor units, from "5.00" or 5 (at most two fraction digits); undefined for anything else. */
function amountMinor(value: unknown): number | undefined {
  if (typeof value === 'string') return MONEY.test(value) ? toMinor(value) : undefined
  // Its decimal text has at most two fraction digits, so ×100 rounds to the amount it says.
  if (typeof value === 'number' && AMOUNT_NUMBER.test(String(value))) return Math.round(value * 100)
  return undefined
}

/** A percentage from 10 or "10" (a whole number from 1 to 100); undefined for anything else. */
function percentOf(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isInteger(value) && value >= 1 && value <= 100 ? value : undefined
  return typeof value === 'string' && PERCENT_TEXT.test(value) ? Number(value) : undefined
}

/** What a reward's fields break besides their schema, field by field (empty when nothing). */
export function rewardProblems(f: Fields, tiers: readonly string[]): FieldProblem[] {
  const problems: FieldProblem[] = []
  if (f.kind === 'fixed_amount') {
    const minor = amountMinor(f.value)
    if (minor === undefined)
      problems.push({
        pointer: '/value',
        detail: 'must be an amount as a string with two fraction digits, such as "5.00", or as a number with at most two, such as 5 or 5.5, for a fixed_amount',
      })
    else if (minor <= 0) problems.push({ pointer: '/value', detail: 'must be an amount above 0.00 for a fixed_amount' })
    if (f.currency === null)
      problems.push({ pointer: '/currency', detail: 'must be a three-letter uppercase currency code, such as "EUR", for a fixed_amount' })
  } else if (f.kind === 'percentage') {
    if (percentOf(f.value) === undefined)
      problems.push({
        pointer: '/value',
        detail: 'must be a whole percentage from 1 to 100, as a number such as 10 or a string such as "10", for a percentage',
      })
    if (f.currency !== null) problems.push({ pointer: '/currency', detail: 'must be absent for a percentage' })
  } else {
    if (f.value !== null) problems.push({ pointer: '/value', detail: `must be absent for ${f.kind}` })
    if (f.currency !== null) problems.push({ pointer: '/currency', detail: `must be absent for ${f.kind}` })
  }
  if (f.min_tier !== null && !tiers.includes(f.min_tier)) {
    problems.push({
      pointer: '/min_tier',
      detail:
        tiers.length === 0
          ? `must name a tier of the shop, which has no tiers (no tier ${f.min_tier})`
          : `must be one of the shop's tiers (${tiers.join(', ')}), not ${f.min_tier}`,
    })
  }
  return problems
}

/** The problems of a new reward's body, for the fields of the right type (those the schema refused keep its error). */
export const newRewardProblems = (body: Record<string, unknown>, tiers: readonly string[]) => rewardProblems(fieldsOf(body, null), tiers)

/** The problems of a change to `stored`: the reward it would make. */
export const changedRewardProblems = (stored: RewardRow, body: Record<string, unknown>, tiers: readonly string[]) =>
  rewardProblems(fieldsOf(body, stored), tiers)

const known = <T>(value: unknown, test: (v: unknown) => boolean, fallback: T): T => (value === undefined ? fallback : test(value) ? (value as T) : fallback)

function fieldsOf(body: Record<string, unknown>, stored: RewardRow | null): Fields {
  const was = stored === null ? null : storedFields(stored)
  const kind = known<RewardKind>(body.kind, (v) => typeof v === 'string', was?.kind ?? 'custom')
  return {
    kind,
    value: known(body.value, (v) => v === null || typeof v === 'string' || typeof v === 'number', was?.value ?? null),
    currency: known(body.currency, (v) => v === null || typeof v === 'string', was?.currency ?? null),
    min_tier: known(body.min_tier, (v) => v === null || typeof v === 'string', was?.min_tier ?? null),
  }
}

function storedFields(row: RewardRow): Fields {
  const kind = row.kind as RewardKind
  return { kind, value: valueOf(kind, row.value), currency: row.currency, min_tier: row.min_tier }
}

const valueOf = (kind: RewardKind, value: number | null) => (value === null ? null : kind === 'fixed_amount' ? fromMinor(Number(value)) : Number(value))
/** The value as stored, from either form the body gave it in (checked: rewardProblems found nothing). */
const storedValue = (kind: RewardKind, value: string | number | null | undefined) =>
  value === null || value === undefined ? null : kind === 'fixed_amount' ? amountMinor(value)! : percentOf(value)!

/** Writes a new reward (its body valid: rewardProblems found nothing). */
export async function createReward(db: Kysely<Tables>, shopId: number, body: RewardInput, nowUs: number): Promise<RewardRow> {
  return insertReward(db, {
    shop_id: shopId,
    name: body.name,
    points: body.points,
    kind: body.kind,
    value: storedValue(body.kind, body.value),
    currency: body.currency ?? null,
    codes: body.codes,
    code_prefix: body.code_prefix ?? null,
    min_tier: body.min_tier ?? null,
    active: body.active === false ? 0 : 1,
    created_us: nowUs,
    updated_us: nowUs,
  })
}

/** Writes a change (valid for the reward it makes); returns the reward, and each changed field's `{from, to}` for the audit log. */
export async function changeReward(db: Kysely<Tables>, stored: RewardRow, body: RewardChanges, nowUs: number) {
  const before = rewardView(stored)
  const kind = body.kind ?? (stored.kind as RewardKind)
  const set: Partial<Record<keyof RewardsTable, unknown>> = { updated_us: nowUs }
  if (body.name !== undefined) set.name = body.name
  if (body.points !== undefined) set.points = body.points
  if (body.kind !== undefined) set.kind = body.kind
  if (body.value !== undefined || body.kind !== undefined)
    set.value = storedValue(kind, body.value === undefined ? valueOf(stored.kind as RewardKind, stored.value) : body.value)
  if (body.currency !== undefined) set.currency = body.currency
  if (body.codes !== undefined) set.codes = body.codes
  if (body.code_prefix !== undefined) set.code_prefix = body.code_prefix
  if (body.min_tier !== undefined) set.min_tier = body.min_tier
  if (body.active !== undefined) set.active = body.active ? 1 : 0
  const row = await updateReward(db, Number(stored.shop_id), Number(stored.id), set as never)
  const after = rewardView(row)
  const changes = Object.fromEntries(
    (Object.keys(after) as (keyof typeof after)[])
      .filter((k) => k !== 'updated_at' && JSON.stringify(before[k]) !== JSON.stringify(after[k]))
      .map((k) => [k, { from: before[k], to: after[k] }]),
  )
  return { row, changes }
}

export { findReward }

const codesLeft = (row: RewardRow) => (row.codes === 'pool' ? Number(row.codes_added) - Number(row.codes_issued) : null)

/** What every view of a reward shows. */
function rewardFields(row: RewardRow) {
  const kind = row.kind as RewardKind
  return {
    id: Number(row.id),
    name: row.name,
    points: Number(row.points),
    kind,
    value: valueOf(kind, row.value),
    currency: row.currency,
    codes: row.codes as CodeSource,
    min_tier: row.min_tier,
    codes_left: codesLeft(row),
  }
}

export function rewardView(row: RewardRow): Static<typeof RewardView> {
  return {
    ...rewardFields(row),
    code_prefix: row.code_prefix,
    active: Number(row.active) === 1,
    codes_added: Number(row.codes_added),
    codes_issued: Number(row.codes_issued),
    created_at: formatUs(Number(row.created_us)),
    updated_at: formatUs(Number(row.updated_us)),
  }
}

/** What the storefront sees of an active reward. */
export function shopRewardView(row: RewardRow): Static<typeof ShopRewardView> {
  const fields = rewardFields(row)
  return { ...fields, available: fields.codes_left === null || fields.codes_left > 0 }
}

/** A stored claim as the answers show it: the decider's own view of it (src/batch/decide-rewards.ts). */
export const claimRowView = (row: ClaimRow): Static<typeof ClaimView> => claimView(storedClaim(Number(row.shop_id), row))
