import type { Static } from 'typebox'
import { formatUs } from '../domain/time.ts'
import type { ChangeEntry } from '../schemas/changes.ts'
import type { ChangeRow } from '../store/changes-repo.ts'

/** A stored feed entry as GET /v3/changes answers it and the relay publishes it: one shape for both. */
export const changeView = (r: ChangeRow): Static<typeof ChangeEntry> =>
  ({
    id: String(r.position),
    position: r.position,
    type: r.type,
    created_at: formatUs(r.created_us),
    data: r.data,
  }) as Static<typeof ChangeEntry>
