import type { Static } from 'typebox'
import { formatUs } from '../domain/time.ts'
import type { ChangeEntry } from '../schemas/changes.ts'
import type { ChangeRow } from '../repos/changes-repo.ts'

/** An entry's id: its shop's id and its position in that shop's feed, so that no two entries of a deployment share one (an outgoing webhook's `webhook-id`). */
export const entryId = (r: Pick<ChangeRow, 'shop_id' | 'position'>) => `${r.shop_id}.${r.position}`

/** A stored feed entry as GET /v3/changes answers it, the relay publishes it and an outgoing webhook carries it: one shape for all. */
export const changeView = (r: ChangeRow): Static<typeof ChangeEntry> =>
  ({
    id: entryId(r),
    position: r.position,
    shop: r.shop,
    type: r.type,
    created_at: formatUs(r.created_us),
    data: r.data,
  }) as Static<typeof ChangeEntry>
