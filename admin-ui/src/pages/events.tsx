import { useEffect, useRef, useState } from 'preact/hooks'
import { api, query, type EventSummary } from '../api.ts'
import { ErrorBox, Outcome, ShopPicker } from '../components/common.tsx'
import { OUTCOMES, time, TOPICS } from '../format.ts'
import { lastListQuery } from '../components/events-query.ts'
import { link, navigate, route } from '../router.ts'

const FILTERS = ['shop', 'outcome', 'topic', 'resource_id', 'since', 'until'] as const
type Filters = Record<(typeof FILTERS)[number], string>

function filtersOf(params: URLSearchParams): Filters {
  return Object.fromEntries(FILTERS.map((f) => [f, params.get(f) ?? ''])) as Filters
}

/** Whether a streamed event passes the filters (the stream itself filters by shop only). */
function matches(e: EventSummary, f: Filters): boolean {
  if (f.outcome && e.outcome !== f.outcome) return false
  if (f.topic && e.topic !== f.topic) return false
  if (f.resource_id && String(e.resource_id) !== f.resource_id) return false
  if (f.until) return false // a window that ends is history, not a tail
  return true
}

/** datetime-local ("2026-11-23T04:50") read as UTC, to the ISO instant the API takes. */
const toInstant = (local: string) => (local === '' ? '' : local.length === 16 ? `${local}:00Z` : `${local}Z`)
const toLocal = (iso: string) => (iso ? iso.slice(0, 16) : '')

export function Events() {
  const filters = filtersOf(route.value.params)
  const [draft, setDraft] = useState<Filters>(filters)
  const [items, setItems] = useState<EventSummary[]>([])
  const [cursor, setCursor] = useState<string | null>(null)
  const [fresh, setFresh] = useState<Set<string>>(new Set())
  const [error, setError] = useState<unknown>(null)
  const [loading, setLoading] = useState(false)
  const [tail, setTail] = useState(true)
  const [tailState, setTailState] = useState<'connecting' | 'live' | 'off'>('off')
  const key = FILTERS.map((f) => filters[f]).join('\u0000')
  const filtersRef = useRef(filters)
  filtersRef.current = filters

  // Only the latest load's answer is shown: an earlier, slower one (other filters) is dropped.
  const loads = useRef(0)
  const load = async (after: string | null) => {
    const mine = ++loads.current
    setLoading(true)
    try {
      const page = await api('GET', '/v3/admin/events', { query: { ...filters, limit: 50, cursor: after } })
      if (mine !== loads.current) return
      // A first page keeps what the live tail added while it loaded (the list was emptied first).
      setItems((old) => (after ? [...old, ...page.items] : [...old.filter((e) => !page.items.some((p) => p.event_id === e.event_id)), ...page.items]))
      setCursor(page.next_cursor)
      setError(null)
    } catch (err) {
      if (mine === loads.current) setError(err)
    } finally {
      if (mine === loads.current) setLoading(false)
    }
  }

  useEffect(() => {
    // New filters: nothing of the old list stays on screen while the new one loads.
    lastListQuery.value = query(filters)
    setDraft(filters)
    setFresh(new Set())
    setItems([])
    setCursor(null)
    void load(null)
  }, [key])

  useEffect(() => {
    if (!tail) {
      setTailState('off')
      return
    }
    setTailState('connecting')
    const source = new EventSource(`/v3/admin/events/stream${query({ shop: filters.shop })}`)
    source.onopen = () => setTailState('live')
    source.onerror = () => setTailState(source.readyState === EventSource.CLOSED ? 'off' : 'connecting')
    source.addEventListener('event', (message) => {
      const event = JSON.parse((message as MessageEvent<string>).data) as EventSummary
      if (!matches(event, filtersRef.current)) return
      setItems((old) => (old.some((e) => e.event_id === event.event_id) ? old : [event, ...old]))
      setFresh((old) => new Set(old).add(event.event_id))
    })
    return () => source.close()
  }, [tail, filters.shop])

  const apply = (e: Event) => {
    e.preventDefault()
    navigate(`events${query(draft)}`)
  }
  const set = (name: keyof Filters) => (e: Event) => setDraft({ ...draft, [name]: (e.currentTarget as HTMLInputElement).value })

  return (
    <main>
      <div class="toolbar">
        <h1>Events</h1>
        <label class="tail">
          <input type="checkbox" name="tail" checked={tail} onChange={(e) => setTail((e.currentTarget as HTMLInputElement).checked)} /> live tail
        </label>
        <span class={`tail-state ${tailState}`} data-tail={tailState}>
          {tailState}
        </span>
      </div>
      <form class="filters" onSubmit={apply}>
        <ShopPicker allowAll value={draft.shop} onChange={(shop) => setDraft({ ...draft, shop })} />
        <label>
          Outcome{' '}
          <select name="outcome" value={draft.outcome} onChange={set('outcome')}>
            <option value="">any</option>
            {OUTCOMES.map((o) => (
              <option value={o}>{o}</option>
            ))}
          </select>
        </label>
        <label>
          Topic{' '}
          <select name="topic" value={draft.topic} onChange={set('topic')}>
            <option value="">any</option>
            {TOPICS.map((t) => (
              <option value={t}>{t}</option>
            ))}
          </select>
        </label>
        <label>
          Resource id <input name="resource_id" inputMode="numeric" size={10} value={draft.resource_id} onInput={set('resource_id')} />
        </label>
        <label>
          Since (UTC){' '}
          <input
            type="datetime-local"
            name="since"
            value={toLocal(draft.since)}
            onInput={(e) => setDraft({ ...draft, since: toInstant((e.currentTarget as HTMLInputElement).value) })}
          />
        </label>
        <label>
          Until (UTC){' '}
          <input
            type="datetime-local"
            name="until"
            value={toLocal(draft.until)}
            onInput={(e) => setDraft({ ...draft, until: toInstant((e.currentTarget as HTMLInputElement).value) })}
          />
        </label>
        <button type="submit">Apply</button>
        <a {...link('events')}>clear</a>
      </form>
      <ErrorBox error={error} />
      <table class="events">
        <thead>
          <tr>
            <th>received</th>
            <th>shop</th>
            <th>topic</th>
            <th>resource</th>
            <th>outcome</th>
            <th>errors</th>
            <th>event</th>
          </tr>
        </thead>
        <tbody>
          {items.map((e) => (
            <tr
              key={e.event_id}
              class={`${fresh.has(e.event_id) ? 'fresh ' : ''}opens`}
              data-event={e.event_id}
              // The whole row opens the inspector (the README's promise); a link or a selection inside it keeps its own way.
              onClick={(click) => {
                if ((click.target as HTMLElement).closest('a') || getSelection()?.toString()) return
                navigate(`events/${encodeURIComponent(e.event_id)}`)
              }}
            >
              <td>{time(e.received_at)}</td>
              <td>{e.shop}</td>
              <td>{e.topic}</td>
              <td>{e.resource_id ?? '—'}</td>
              <td>
                <Outcome outcome={e.outcome} />
                {e.duplicate_of && <span class="muted"> of {e.duplicate_of.slice(0, 8)}…</span>}
                {e.replay_of && <span class="muted replay"> replay</span>}
              </td>
              <td>{e.errors && e.errors.length > 0 ? e.errors.map((x) => x.pointer || '(body)').join(', ') : ''}</td>
              <td>
                <a {...link(`events/${encodeURIComponent(e.event_id)}`)}>{e.event_id}</a>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {!loading && items.length === 0 && <p class="muted">No events match.</p>}
      {cursor && (
        <button type="button" disabled={loading} onClick={() => load(cursor)}>
          Load more
        </button>
      )}
    </main>
  )
}
