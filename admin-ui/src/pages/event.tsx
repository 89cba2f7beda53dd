import { useEffect, useState } from 'preact/hooks'
import { api, ApiError, enc, type Replayed } from '../api.ts'
import { ErrorBox, Outcome } from '../components/common.tsx'
import { JsonView } from '../components/json-view.tsx'
import { existingPointer } from '../json-pointer.ts'
import { time } from '../format.ts'
import { useData } from '../hooks/use-data.ts'
import { link } from '../router.ts'
import { canChange } from '../session.ts'
import { lastListQuery } from '../components/events-query.ts'

export function EventInspector({ id }: { id: string }) {
  const [replayed, setReplayed] = useState<Replayed | null>(null)
  const [replayError, setReplayError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)
  // Another event: nothing of the last one stays, its replay's answer neither.
  const { data: event, error } = useData(() => api('GET', '/v3/admin/events/{event_id}', { params: { event_id: id } }), [id], { reset: true })
  useEffect(() => {
    setReplayed(null)
    setReplayError(null)
  }, [id])

  const replay = async () => {
    setBusy(true)
    setReplayed(null)
    setReplayError(null)
    try {
      setReplayed(await api('POST', '/v3/admin/events/{event_id}/replay', { params: { event_id: id } }))
    } catch (err) {
      setReplayError(err)
    } finally {
      setBusy(false)
    }
  }

  if (error)
    return (
      <main>
        <ErrorBox error={error} />
      </main>
    )
  if (!event) return <main class="muted">Loading…</main>
  const errors = event.errors ?? []
  let parsed: unknown
  try {
    parsed = event.body === null ? undefined : JSON.parse(event.body)
  } catch {
    parsed = undefined
  }
  const show = (at: string) => {
    const mark = document.querySelector(`mark.j-error[data-pointer="${CSS.escape(at)}"]`)
    mark?.scrollIntoView({ block: 'center' })
    mark?.classList.remove('flash')
    void (mark as HTMLElement | null)?.offsetWidth
    mark?.classList.add('flash')
  }
  return (
    <main class="inspector">
      <a class="back" {...link(`events${lastListQuery.value}`)}>
        ← Events
      </a>
      <div class="toolbar">
        <h1>Event {event.event_id}</h1>
        {canChange.value && (
          <button
            type="button"
            class="primary"
            name="replay"
            disabled={busy || event.body === null}
            onClick={replay}
            title={event.body === null ? 'the body was erased: nothing to replay' : "run the stored body through today's validation and rules as a new event"}
          >
            Replay
          </button>
        )}
      </div>
      {replayed && (
        <div class="notice" role="status" data-replay={replayed.status}>
          Replayed: <Outcome outcome={replayed.status} /> {replayed.status === 'duplicate' ? 'a redelivery of ' : 'as '}
          <a {...link(`events/${enc(replayed.event_id)}`)}>{replayed.event_id}</a>
          {replayed.status === 'duplicate' && ' (the replay is stored as an event of its own, marked replay, in Events)'}
        </div>
      )}
      {replayError !== null && (
        <div data-replay="refused">
          <p>The replay was refused, as this webhook would be today:</p>
          <ErrorBox error={replayError} pointers />
          {replayError instanceof ApiError && typeof replayError.problem.event_id === 'string' && (
            <p>
              The refused replay is stored as <a {...link(`events/${enc(replayError.problem.event_id)}`)}>{replayError.problem.event_id}</a>.
            </p>
          )}
        </div>
      )}
      <dl class="facts">
        <dt>shop</dt>
        <dd>{event.shop}</dd>
        <dt>topic</dt>
        <dd>{event.topic}</dd>
        <dt>resource</dt>
        <dd>{event.resource_id ?? '—'}</dd>
        <dt>received</dt>
        <dd>{time(event.received_at)}</dd>
        <dt>outcome</dt>
        <dd>
          <Outcome outcome={event.outcome} />
        </dd>
        {event.duplicate_of && (
          <>
            <dt>duplicate of</dt>
            <dd>
              <a class="original" {...link(`events/${enc(event.duplicate_of)}`)}>
                {event.duplicate_of}
              </a>
            </dd>
          </>
        )}
        {event.replay_of && (
          <>
            <dt>replay of</dt>
            <dd>
              <a {...link(`events/${enc(event.replay_of)}`)}>{event.replay_of}</a>
            </dd>
          </>
        )}
      </dl>
      {errors.length > 0 && (
        <section>
          <h2>Errors</h2>
          <ul class="field-errors">
            {errors.map((e) => {
              const at = parsed === undefined ? '' : existingPointer(parsed, e.pointer)
              return (
                <li>
                  <a href={`#${e.pointer}`} onClick={(click) => (click.preventDefault(), show(at))}>
                    <code class="pointer">{e.pointer || '(body)'}</code>
                  </a>{' '}
                  {e.detail}
                  {at !== e.pointer && <span class="muted"> (not in the body: {at === '' ? 'the body' : <code>{at}</code>} is marked)</span>}
                </li>
              )
            })}
          </ul>
        </section>
      )}
      <section>
        <h2>Body</h2>
        {event.body === null ? (
          <p class="muted">Erased{event.redacted ? ' (redacted: the customer or order was deleted)' : ''}.</p>
        ) : (
          <JsonView text={event.body} errors={errors} />
        )}
      </section>
      <section class="headers">
        <h2>Headers</h2>
        {event.redacted ? (
          <p class="muted">Erased with the body (the customer or order was deleted).</p>
        ) : Object.keys(event.headers).length > 0 ? (
          <table class="headers">
            <tbody>
              {Object.entries(event.headers).map(([name, value]) => (
                <tr>
                  <th>{name}</th>
                  <td>
                    <code>{value}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : (
          <p class="muted">None kept.</p>
        )}
      </section>
    </main>
  )
}
