import type { Insertable, Selectable } from 'kysely'
import type { StoredAdjustment, StoredRedemption } from '../batch/state.ts'
import { formatUs } from '../domain/time.ts'
import type { AdjustmentsTable, RedemptionsTable } from './tables.ts'

// Redemptions to rows and back. The lots a redemption spent are kept on it as
// JSON [[available_us, points], …], so that a cancel gives back exactly those.

export function parseStoredEntries(shopId: number, row: Selectable<RedemptionsTable>): StoredRedemption {
  return {
    shopId,
    id: row.id,
    customerId: Number(row.customer_id),
    points: Number(row.points),
    reference: row.reference,
    createdUs: Number(row.created_us),
    availableAfter: Number(row.available_after),
    idemKey: row.idem_key,
    requestHash: row.request_hash,
    cancelledUs: row.cancelled_us === null ? null : Number(row.cancelled_us),
    cancelAvailableAfter: row.cancel_available_after === null ? null : Number(row.cancel_available_after),
    entries: (JSON.parse(row.entries) as [number, number][]).map(([available_us, points]) => ({ available_us, points })),
  }
}

export function redemptionRow(r: StoredRedemption): Insertable<RedemptionsTable> {
  return {
    shop_id: r.shopId,
    id: r.id,
    customer_id: r.customerId,
    points: r.points,
    reference: r.reference,
    created_at: formatUs(r.createdUs),
    created_us: r.createdUs,
    available_after: r.availableAfter,
    idem_key: r.idemKey,
    request_hash: r.requestHash,
    entries: JSON.stringify(r.entries.map((e) => [e.available_us, e.points])),
    cancelled_at: r.cancelledUs === null ? null : formatUs(r.cancelledUs),
    cancelled_us: r.cancelledUs,
    cancel_available_after: r.cancelAvailableAfter,
  }
}

export function storedAdjustment(shopId: number, row: Selectable<AdjustmentsTable>): StoredAdjustment {
  return {
    shopId,
    id: row.id,
    customerId: Number(row.customer_id),
    points: Number(row.points),
    reason: row.reason,
    operator: row.operator,
    createdUs: Number(row.created_us),
    availableAfter: Number(row.available_after),
    idemKey: row.idem_key,
    requestHash: row.request_hash,
  }
}

export function adjustmentRow(a: StoredAdjustment): Insertable<AdjustmentsTable> {
  return {
    shop_id: a.shopId,
    id: a.id,
    customer_id: a.customerId,
    points: a.points,
    reason: a.reason,
    operator: a.operator,
    created_at: formatUs(a.createdUs),
    created_us: a.createdUs,
    available_after: a.availableAfter,
    idem_key: a.idemKey,
    request_hash: a.requestHash,
  }
}
