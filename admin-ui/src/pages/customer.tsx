import { useEffect, useState } from 'preact/hooks'
import { api, enc, query, type LedgerEntry, type OrderView, type Redemption } from '../api.ts'
import { ErrorBox, ShopPicker, defaultShop } from '../components/common.tsx'
import { time } from '../format.ts'
import { useData } from '../hooks/use-data.ts'
import { link, navigate, route } from '../router.ts'
import { canChange } from '../session.ts'
import { BirthdayForm } from '../components/birthday-form.tsx'

function basis(entry: LedgerEntry): string {
  const b = entry.basis
  if (!b) return ''
  return `${b.amount}${b.currency ? ` ${b.currency}` : ''} × ${b.rate} (rule v${b.rule_version})`
}

/** What a ledger entry is for: an adjustment's reason and operator, or a redemption's reference. */
function note(e: LedgerEntry): string {
  if (e.adjustment) return `${e.adjustment.reason} (by ${e.adjustment.operator})`
  if (e.redemption) return `for ${e.redemption.reference}`
  return ''
}

function Ledger({ entries }: { entries: LedgerEntry[] }) {
  if (entries.length === 0) return <p class="muted">No ledger entries.</p>
  return (
    <table class="ledger">
      <thead>
        <tr>
          <th>created</th>
          <th>points</th>
          <th>reason</th>
          <th>order</th>
          <th>basis</th>
          <th>available</th>
          <th>note</th>
        </tr>
      </thead>
      <tbody>
        {entries.map((e) => (
          <tr>
            <td>{time(e.created_at)}</td>
            <td class={`num ${e.points < 0 ? 'neg' : ''}`}>{e.points > 0 ? `+${e.points}` : e.points}</td>
            <td>
              {e.reason}
              {e.debt ? ' (debt)' : ''}
            </td>
            <td>{e.order_id ?? ''}</td>
            <td>{basis(e)}</td>
            <td>{time(e.available_at)}</td>
            <td>{note(e)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  )
}

function Orders({ orders }: { orders: OrderView[] }) {
  if (orders.length === 0) return <p class="muted">No orders.</p>
  return (
    <table class="orders">
      <thead>
        <tr>
          <th>order</th>
          <th>ref</th>
          <th>total</th>
          <th>points held</th>
          <th>why</th>
        </tr>
      </thead>
      <tbody>
        {orders.map((o) => (
          <tr>
            <td>{o.id}</td>
            <td>{o.ref ?? ''}</td>
            <td>{o.total ? `${o.total} ${o.currency ?? ''}` : ''}</td>
            <td class="num">{o.points.held}</td>
            <td>{o.points.why}</td>
          </tr>
        ))}
      </tbody>
    </table>
  )
}

function AdjustForm({ shop, id, onDone }: { shop: string; id: number; onDone: () => void }) {
  const [points, setPoints] = useState('')
  const [reason, setReason] = useState('')
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)
  // One key per adjustment: a retry of the same submission (a lost answer) is not applied twice.
  const [idempotencyKey, setIdempotencyKey] = useState(() => crypto.randomUUID())
  const submit = async (e: Event) => {
    e.preventDefault()
    setBusy(true)
    setError(null)
    try {
      await api('POST', '/v3/admin/shops/{shop}/customers/{id}/adjustments', {
        params: { shop, id },
        body: { points: Number(points.trim()), reason },
        headers: { 'idempotency-key': idempotencyKey },
      })
      setPoints('')
      setReason('')
      setIdempotencyKey(crypto.randomUUID())
      onDone()
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  // Signed as the placeholder shows it (+50, -20), or bare (50).
  const valid = /^[+-]?[1-9][0-9]*$/.test(points.trim()) && reason.trim().length > 0 && reason.length <= 500
  return (
    <form class="adjust" onSubmit={submit}>
      <h2>Adjust the balance</h2>
      <label>
        Points{' '}
        <input
          name="points"
          inputMode="numeric"
          size={8}
          placeholder="+50 or -20"
          value={points}
          onInput={(e) => setPoints((e.currentTarget as HTMLInputElement).value)}
        />
      </label>
      <label class="grow">
        Reason{' '}
        <input
          name="reason"
          maxLength={500}
          placeholder="why (kept in the ledger and the audit log)"
          value={reason}
          onInput={(e) => setReason((e.currentTarget as HTMLInputElement).value)}
        />
      </label>
      <button type="submit" disabled={busy || !valid}>
        Adjust
      </button>
      <ErrorBox error={error} labels={{ '/points': 'Points', '/reason': 'Reason' }} />
    </form>
  )
}

/** The customer's redemptions, newest first, each with a cancel (asked to confirm) while it stands. */
function Redemptions({
  shop,
  id,
  items,
  more,
  changeable,
  onDone,
}: {
  shop: string
  id: number
  items: Redemption[]
  more: boolean
  changeable: boolean
  onDone: () => void
}) {
  const [confirming, setConfirming] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(null)
  if (items.length === 0) return <p class="muted">No redemptions.</p>
  const cancel = async (redemptionId: string) => {
    setBusy(true)
    setError(null)
    try {
      await api('POST', '/v3/admin/shops/{shop}/customers/{id}/redemptions/{redemption_id}/cancel', { params: { shop, id, redemption_id: redemptionId } })
      setConfirming(null)
      onDone()
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  return (
    <>
      <ErrorBox error={error} />
      <table class="redemptions">
        <thead>
          <tr>
            <th>created</th>
            <th>points</th>
            <th>reference</th>
            <th>available after</th>
            <th>cancelled</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {items.map((r) => (
            <tr data-redemption={r.redemption_id} class={r.cancelled_at ? 'cancelled' : ''}>
              <td>{time(r.created_at)}</td>
              <td class="num">{r.points}</td>
              <td>{r.reference}</td>
              <td class="num">{r.available_after}</td>
              <td>{r.cancelled_at ? time(r.cancelled_at) : ''}</td>
              <td>
                {!r.cancelled_at &&
                  changeable &&
                  (confirming === r.redemption_id ? (
                    <span class="confirm">
                      Give the {r.points} points back?{' '}
                      <button type="button" class="danger" name="confirm-cancel" disabled={busy} onClick={() => cancel(r.redemption_id)}>
                        Cancel the redemption
                      </button>{' '}
                      <button type="button" onClick={() => setConfirming(null)}>
                        Keep it
                      </button>
                    </span>
                  ) : (
                    <button type="button" name="cancel-redemption" onClick={() => setConfirming(r.redemption_id)}>
                      Cancel…
                    </button>
                  ))}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {more && <p class="muted">Only the latest {items.length} redemptions are listed.</p>}
    </>
  )
}

function CustomerCard({ shop, id }: { shop: string; id: number }) {
  const { data, error, refresh } = useData(
    () =>
      Promise.all([
        api('GET', '/v3/admin/shops/{shop}/customers/{id}', { params: { shop, id } }),
        api('GET', '/v3/admin/shops/{shop}/customers/{id}/redemptions', { params: { shop, id }, query: { limit: 100 } }),
      ]),
    [shop, id],
  )
  if (error) return <ErrorBox error={error} />
  const [view, redemptions] = data ?? []
  if (!view) return <p class="muted">Loading…</p>
  const c = view.customer
  const b = view.points
  const entries = b.entries
  const deleted = c.deleted
  return (
    <section class="card customer" data-customer={c.id}>
      <header>
        <h2>
          Customer {c.id} {[c.first_name, c.last_name].filter(Boolean).join(' ')}
        </h2>
        <span class="muted">{c.email ?? ''}</span>
        {deleted && <span class="badge o-rejected">deleted</span>}
      </header>
      <div class="figures balances">
        <div>
          <span class="figure" data-balance="available">
            {b.available}
          </span>
          <span class="muted">available</span>
        </div>
        <div>
          <span class="figure" data-balance="pending">
            {b.pending}
          </span>
          <span class="muted">pending</span>
        </div>
        <div>
          <span class="figure" data-balance="lifetime">
            {b.lifetime_earned}
          </span>
          <span class="muted">lifetime earned</span>
        </div>
        {c.tier_progress && (
          <div>
            <span class="figure" data-tier>
              {c.tier ?? 'no tier'}
            </span>
            <span class="muted">
              {c.tier_progress.points} base points in {c.tier_progress.window_days} days
              {c.tier_progress.next ? `; ${c.tier_progress.next.name} at ${c.tier_progress.next.points}` : ''}
            </span>
          </div>
        )}
      </div>
      {!deleted && canChange.value && <AdjustForm shop={shop} id={c.id} onDone={refresh} />}
      {!deleted && <BirthdayForm shop={shop} id={c.id} changeable={canChange.value} onDone={refresh} />}
      <h2>Ledger</h2>
      <Ledger entries={entries} />
      {b.more_entries && <p class="muted">Only the latest {entries.length} entries are listed.</p>}
      <h2>Redemptions</h2>
      <Redemptions
        shop={shop}
        id={c.id}
        items={redemptions?.items ?? []}
        more={redemptions?.next_cursor != null}
        changeable={!deleted && canChange.value}
        onDone={refresh}
      />
      <h2>Orders</h2>
      <Orders orders={view.orders} />
    </section>
  )
}

function ByEmail({ shop, email }: { shop: string; email: string }) {
  const { data, error } = useData(
    () =>
      Promise.all([
        api('GET', '/v3/admin/shops/{shop}/customers', { params: { shop }, query: { email } }),
        api('GET', '/v3/admin/shops/{shop}/guests', { params: { shop }, query: { email } }),
      ]),
    [shop, email],
    { reset: true },
  )
  if (error) return <ErrorBox error={error} />
  if (!data) return <p class="muted">Searching…</p>
  const [{ items: found }, guest] = data
  const guestOrders = guest?.orders ?? []
  const credited = guest?.credited_orders ?? []
  return (
    <>
      {found.length === 0 && <p class="muted">No customer with the e-mail {email}.</p>}
      {found.map((v) => (
        <CustomerCard key={v.id} shop={shop} id={v.id} />
      ))}
      {guest && (guestOrders.length > 0 || guest.points.entries.length > 0) && (
        <section class="card guest">
          <h2>Guest orders of {guest.email}</h2>
          <p>
            <strong>{guest.points.held}</strong> points held under this e-mail until a customer registers with it.
          </p>
          <Orders orders={guestOrders} />
          <h2>Ledger</h2>
          <Ledger entries={guest.points.entries} />
        </section>
      )}
      {credited.length > 0 && (
        <section class="card credited">
          <h2>Orders of {email} credited to a customer</h2>
          <p class="muted">Sent with this e-mail and linked to no customer: their points went to the customer the e-mail matched.</p>
          <table class="orders">
            <thead>
              <tr>
                <th>order</th>
                <th>total</th>
                <th>points held</th>
                <th>by customer</th>
              </tr>
            </thead>
            <tbody>
              {credited.map((o) => (
                <tr data-order={o.id}>
                  <td>{o.id}</td>
                  <td>{o.total ? `${o.total} ${o.currency ?? ''}` : ''}</td>
                  <td class="num">{o.points.held}</td>
                  <td>
                    <a {...link(`customer?shop=${enc(shop)}&q=${o.points.customer_id}`)}>customer {o.points.customer_id}</a>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}
    </>
  )
}

const PAGE_SIZE = 50

/** The shop's customers, newest id first, a page at a time (`cursor` in the address), with their tier and balance: what the page shows before a search. */
function CustomerList({ shop, cursor }: { shop: string; cursor: string | null }) {
  const { data: page, error } = useData(
    () => api('GET', '/v3/admin/shops/{shop}/customers', { params: { shop }, query: { limit: PAGE_SIZE, cursor } }),
    [shop, cursor],
  )
  if (error) return <ErrorBox error={error} />
  if (!page) return <p class="muted">Loading…</p>
  if (page.items.length === 0) return <p class="muted">{cursor ? 'No more customers.' : `No customers in ${shop} yet.`}</p>
  return (
    <section class="card customer-list">
      <table class="customers">
        <thead>
          <tr>
            <th>id</th>
            <th>name</th>
            <th>e-mail</th>
            <th>tier</th>
            <th class="num">available</th>
            <th class="num">pending</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {page.items.map((c) => (
            <tr data-customer={c.id}>
              <td class="num">
                <a {...link(`customer?shop=${enc(shop)}&q=${c.id}`)}>{c.id}</a>
              </td>
              <td>{[c.first_name, c.last_name].filter(Boolean).join(' ')}</td>
              <td>{c.email ?? ''}</td>
              <td data-tier>{c.tier ?? ''}</td>
              <td class="num" data-balance="available">
                {c.available}
              </td>
              <td class="num" data-balance="pending">
                {c.pending}
              </td>
              <td>{c.deleted && <span class="badge o-rejected">deleted</span>}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p class="pager">
        {cursor && <a {...link(`customer?shop=${enc(shop)}`)}>← Newest</a>}{' '}
        {page.next_cursor && (
          <a rel="next" {...link(`customer${query({ shop, cursor: page.next_cursor })}`)}>
            Older →
          </a>
        )}
      </p>
    </section>
  )
}

export function Customer() {
  const params = route.value.params
  const shop = params.get('shop') ?? defaultShop()
  const q = params.get('q') ?? ''
  const [draft, setDraft] = useState(q)
  const [draftShop, setDraftShop] = useState(shop)
  // Apart: the shops' list arriving (which names the default shop) must not wipe what is being typed.
  useEffect(() => setDraft(q), [q])
  useEffect(() => setDraftShop(shop), [shop])
  const submit = (e: Event) => {
    e.preventDefault()
    navigate(`customer?shop=${enc(draftShop)}&q=${enc(draft.trim())}`)
  }
  const id = /^[0-9]+$/.test(q) ? Number(q) : null
  return (
    <main data-query={q}>
      <div class="toolbar">
        <h1>Customer</h1>
      </div>
      <form class="filters" onSubmit={submit}>
        <ShopPicker
          value={draftShop}
          onChange={(s) => {
            setDraftShop(s)
            // Nothing searched: the picker's shop's list, at once.
            if (draft.trim() === '') navigate(`customer?shop=${enc(s)}`)
          }}
        />
        <label class="grow">
          Id or e-mail{' '}
          <input name="q" value={draft} placeholder="42 or ada@example.com" onInput={(e) => setDraft((e.currentTarget as HTMLInputElement).value)} />
        </label>
        <button type="submit" disabled={draft.trim() === '' || draftShop === ''}>
          Find
        </button>
      </form>
      {!q && shop && <CustomerList key={shop} shop={shop} cursor={params.get('cursor')} />}
      {q && shop && (id !== null ? <CustomerCard key={`${shop}/${id}`} shop={shop} id={id} /> : <ByEmail key={`${shop}/${q}`} shop={shop} email={q} />)}
    </main>
  )
}
