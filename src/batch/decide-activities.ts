import { formatUs } from '../domain/time.ts'
import { awardedReferences } from '../loyalty/activities.ts'
import { activityAt, exclusionOf, optionsAt, tagSetOf } from '../loyalty/program.ts'
import { UTC } from '../domain/calendar.ts'
import { addToLots, availableAt, type Lot } from '../loyalty/wallet.ts'
import type { ActivityCommand, ActivityView, CommandOutcome, VoidActivityCommand } from './commands.ts'
import type { ImportBook } from './decide-import.ts'
import { keyOf, type BatchState, type Decision, type StoredActivity } from './state.ts'

// Activities (docs/program/activities.md): a shop's reports of actions its customers took, and
// their voids. Each report is decided with every other report of the customer's action: the
// slots of a period go to the earliest occurred_at (src/loyalty/activities.ts awardedReferences),
// so that a report arriving late takes a slot from a later one. What a report holds is brought
// to what the set says, by appended entries (reason `activity`): an award, or a correction that
// takes it back. Nothing is rewritten. Pure: the scratch state and the decision's lists are
// handed in by the points decider (src/batch/decide-points.ts), which has loaded the customer's
// lots and holds their lock.

/** What the activities of a batch write besides the ledger: each report as it ends, with what it held before. */
export type ActivityWrites = NonNullable<Decision['activities']>

/** The status a report shows. */
export function activityStatus(a: StoredActivity): ActivityView['status'] {
  if (a.voidedUs !== null) return 'voided'
  if (!a.eligible) return 'not_eligible'
  return a.points > 0 ? 'awarded' : 'over_limit'
}

/** The view of a report the answers carry. */
export function activityView(a: StoredActivity): ActivityView {
  return { action: a.action, reference: a.reference, occurred_at: formatUs(a.occurredUs), status: activityStatus(a), points: a.points }
}

const sameReport = (a: { action: string; reference: string }, b: { action: string; reference: string }) => a.action === b.action && a.reference === b.reference

/**
 * Decides a report or a void of a live customer, whose lots are `lots`; `writes` collects the
 * reports the batch writes. The state's `activities` is the batch's scratch (an Overlay).
 */
export function decideActivity(
  state: BatchState,
  c: ActivityCommand | VoidActivityCommand,
  lots: Lot[],
  book: ImportBook,
  writes: ActivityWrites,
): CommandOutcome {
  const key = keyOf(c.shopId, c.customerId)
  const reports = state.activities.get(key) ?? []
  const stored = reports.find((a) => sameReport(a, c))
  if (c.command === 'void-activity') {
    if (!stored) return { status: 'not-found', detail: `no activity ${c.action} ${JSON.stringify(c.reference)} of customer ${c.customerId}` }
    if (stored.voidedUs !== null) return { status: 'activity-voided', activity: activityView(stored), replayed: true }
    const after = resettle(state, c, [...reports.filter((a) => a !== stored), { ...stored, voidedUs: c.atUs }], lots, book, writes)
    return { status: 'activity-voided', activity: activityView(after.find((a) => sameReport(a, c))!), replayed: false }
  }
  if (stored) {
    return stored.occurredUs === c.occurredUs
      ? { status: 'activity-recorded', activity: activityView(stored), replayed: true }
      : { status: 'activity-conflict', activity: activityView(stored) }
  }
  const rule = state.rules.get(c.shopId)?.rule
  if (!rule?.activities.some((a) => a.action === c.action)) {
    const known = rule?.activities.map((a) => a.action) ?? []
    return {
      status: 'activity-unknown',
      detail: `the shop's rule names no action ${c.action} (${known.length > 0 ? `it names ${known.join(', ')}` : 'it names none'})`,
    }
  }
  const program = state.programs.get(c.shopId) ?? []
  const customer = state.customers.get(key)
  const excluded = exclusionOf(optionsAt(program, c.occurredUs), tagSetOf(customer?.record.tags ?? null)) !== undefined
  const report: StoredActivity = {
    shopId: c.shopId,
    customerId: c.customerId,
    action: c.action,
    reference: c.reference,
    occurredUs: c.occurredUs,
    reportedUs: c.atUs,
    eligible: !excluded && activityAt(program, c.occurredUs, c.action) !== null,
    voidedUs: null,
    points: 0,
    availableUs: null,
    rev: 0,
  }
  const after = resettle(state, c, [...reports, report], lots, book, writes)
  return { status: 'activity-recorded', activity: activityView(after.find((a) => sameReport(a, c))!), replayed: false }
}

/**
 * Brings each report of the command's action to what the set of them says: a report that now
 * holds a slot and held no points is awarded its terms' points (available at once); one that
 * lost its slot, or was voided, gives back what it held, from the lot it went to. Writes the
 * customer's reports into the scratch and the changed ones into `writes`; returns the reports.
 */
function resettle(
  state: BatchState,
  c: ActivityCommand | VoidActivityCommand,
  reports: StoredActivity[],
  lots: Lot[],
  book: ImportBook,
  writes: ActivityWrites,
): StoredActivity[] {
  const program = state.programs.get(c.shopId) ?? []
  const zone = state.timeZones.get(c.shopId) ?? UTC
  const mine = reports.filter((a) => a.action === c.action)
  const awarded = awardedReferences(
    zone,
    mine.map((a) => ({
      reference: a.reference,
      occurredUs: a.occurredUs,
      takesSlot: a.eligible && a.voidedUs === null,
      terms: activityAt(program, a.occurredUs, a.action),
    })),
  )
  if (book.settleExpiry(c.shopId, c.customerId, lots, c.atUs) !== 0) book.touched.push(keyOf(c.shopId, c.customerId))
  const found = state.activities.get(keyOf(c.shopId, c.customerId)) ?? []
  const out = reports.map((a) => {
    if (a.action !== c.action) return a
    const target = awarded.has(a.reference) ? (activityAt(program, a.occurredUs, a.action)?.points ?? 0) : 0
    const previous = found.find((r) => sameReport(r, a))
    if (previous !== undefined && previous.voidedUs === a.voidedUs && a.points === target) return a
    let next = a
    if (a.points !== target) {
      const entry = target > 0 ? { available_us: c.atUs, points: target - a.points } : { available_us: a.availableUs ?? c.atUs, points: -a.points }
      addToLots(lots, entry)
      const row = book.row(c.shopId, c.customerId, entry, 'activity', null)
      book.ledger.push(entry.points < 0 && availableAt(lots, c.atUs) < 0 ? { ...row, debt: true } : row)
      next = { ...a, points: target, availableUs: target > 0 ? entry.available_us : a.availableUs }
    }
    record(writes, next, previous)
    return next
  })
  state.activities.set(keyOf(c.shopId, c.customerId), out)
  book.touched.push(keyOf(c.shopId, c.customerId))
  return out
}

/** Notes a report the batch writes: once, as it ends, with what it held when the batch found it (null: not stored before). */
function record(writes: ActivityWrites, a: StoredActivity, previous: StoredActivity | undefined): void {
  const at = writes.findIndex((w) => sameReport(w.activity, a) && w.activity.shopId === a.shopId && w.activity.customerId === a.customerId)
  if (at !== -1) writes[at] = { activity: a, before: writes[at]!.before }
  else writes.push({ activity: a, before: previous && previous.rev > 0 ? { points: previous.points, voided: previous.voidedUs !== null } : null })
}
