import { useEffect, useState } from 'preact/hooks'
import { api, enc, type Balances, type CustomerView, type LedgerEntry, type OrderPoints, type Page } from '../api.ts'
import { ErrorBox, shops, ShopPicker } from '../components/common.tsx'
import { time } from '../format.ts'
import { navigate, route } from '../router.ts'

function balancesOf(view: CustomerView): Balances {
  const p = view.points
  return (p.balances ?? p) as Balances
}

function basis(entry: LedgerEntry): string {
  const b = entry.basis
  if (!b) return ''
  return `${(b.amount / 100).toFixed(2)} ${b.currency} × ${b.rate} (rule v${b.rule_version})`
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
            <td>{[e.note, e.operator ? `by ${e.operator}` : ''].filter(Boolean).join(' ')}</td>
          </tr>
        ))}
      </tbody>
    </table>
  )
}

function Orders({ orders }: { orders: OrderPoints[] }) {
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
            <td class="num">{o.points?.held ?? o.points?.points ?? 0}</td>
            <td>{o.points?.why ?? o.points?.reason ?? ''}</td>
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
      await api('POST', `/v3/admin/shops/${enc(shop)}/customers/${id}/adjustments`, { points: Number(points), reason }, { 'idempotency-key': idempotencyKey })
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
  const valid = /^-?[1-9][0-9]*$/.test(points.trim()) && reason.trim().length > 0 && reason.length <= 500
  return (
    <form class="adjust" onSubmit={submit}>
      <h2>Adjust the balance</h2>
      <label>
        Points <input name="points" inputMode="numeric" size={8} placeholder="+50 or -20" value={points} onInput={(e) => setPoints((e.currentTarget as HTMLInputElement).value)} />
      </label>
      <label class="grow">
        Reason{' '}
        <input name="reason" maxLength={500} placeholder="why (kept in the ledger and the audit log)" value={reason} onInput={(e) => setReason((e.currentTarget as HTMLInputElement).value)} />
      </label>
      <button type="submit" disabled={busy || !valid}>
        Adjust
      </button>
      <ErrorBox error={error} />
    </form>
  )
}

function CustomerCard({ shop, id }: { shop: string; id: number }) {
  const [view, setView] = useState<CustomerView | null>(null)
  const [error, setError] = useState<unknown>(null)
  const [tick, setTick] = useState(0)
  useEffect(() => {
    let live = true
    api<CustomerView>('GET', `/v3/admin/shops/${enc(shop)}/customers/${id}`).then(
      (v) => live && (setView(v), setError(null)),
      (err) => live && setError(err),
    )
    return () => {
      live = false
    }
  }, [shop, id, tick])
  if (error) return <ErrorBox error={error} />
  if (!view) return <p class="muted">Loading…</p>
  const c = view.customer
  const b = balancesOf(view)
  const entries = (view.points.entries ?? []) as LedgerEntry[]
  const deleted = c.deleted === true || Boolean(c.deleted_at)
  return (
    <section class="card customer" data-customer={c.id}>
      <header>
        <h2>
          Customer {c.id} {[c.first_name, c.last_name].filter(Boolean).join(' ')}
        </h2>
        <span class="muted">{c.email ?? ''}</span>
        {deleted && <span class="badge o-rejected">deleted {time(c.deleted_at ?? null)}</span>}
      </header>
      <div class="figures balances">
        <div>
          <span class="figure" data-balance="available">{b.available}</span>
          <span class="muted">available</span>
        </div>
        <div>
          <span class="figure" data-balance="pending">{b.pending}</span>
          <span class="muted">pending</span>
        </div>
        <div>
          <span class="figure" data-balance="lifetime">{b.lifetime_earned}</span>
          <span class="muted">lifetime earned</span>
        </div>
      </div>
      {!deleted && <AdjustForm shop={shop} id={c.id} onDone={() => setTick((t) => t + 1)} />}
      <h2>Ledger</h2>
      <Ledger entries={entries} />
      <h2>Orders</h2>
      <Orders orders={view.orders ?? []} />
    </section>
  )
}

interface Guest {
  email: string
  points: { balances?: Balances } & Partial<Balances>
  orders: OrderPoints[]
}

function ByEmail({ shop, email }: { shop: string; email: string }) {
  const [found, setFound] = useState<CustomerView[] | null>(null)
  const [guest, setGuest] = useState<Guest | null>(null)
  const [error, setError] = useState<unknown>(null)
  useEffect(() => {
    let live = true
    setFound(null)
    setGuest(null)
    Promise.all([
      api<Page<CustomerView>>('GET', `/v3/admin/shops/${enc(shop)}/customers?email=${enc(email)}`),
      api<Guest>('GET', `/v3/admin/shops/${enc(shop)}/guests?email=${enc(email)}`),
    ]).then(
      ([customers, g]) => live && (setFound(customers.items), setGuest(g), setError(null)),
      (err) => live && setError(err),
    )
    return () => {
      live = false
    }
  }, [shop, email])
  if (error) return <ErrorBox error={error} />
  if (!found) return <p class="muted">Searching…</p>
  const guestOrders = guest?.orders ?? []
  return (
    <>
      {found.length === 0 && <p class="muted">No customer with the e-mail {email}.</p>}
      {found.map((v) => (
        <CustomerCard key={v.customer.id} shop={shop} id={v.customer.id} />
      ))}
      {guestOrders.length > 0 && guest && (
        <section class="card guest">
          <h2>Guest orders of {email}</h2>
          <p>
            {(guest.points.balances ?? guest.points).available ?? 0} available, {(guest.points.balances ?? guest.points).pending ?? 0} pending: held until a
            customer registers with this e-mail.
          </p>
          <Orders orders={guestOrders} />
        </section>
      )}
    </>
  )
}

export function Customer() {
  const params = route.value.params
  const shop = params.get('shop') ?? shops.value?.[0]?.shop ?? ''
  const q = params.get('q') ?? ''
  const [draft, setDraft] = useState(q)
  const [draftShop, setDraftShop] = useState(shop)
  useEffect(() => {
    setDraft(q)
    setDraftShop(shop)
  }, [q, shop])
  const submit = (e: Event) => {
    e.preventDefault()
    navigate(`customer?shop=${enc(draftShop)}&q=${enc(draft.trim())}`)
  }
  const id = /^[0-9]+$/.test(q) ? Number(q) : null
  return (
    <main>
      <div class="toolbar">
        <h1>Customer</h1>
      </div>
      <form class="filters" onSubmit={submit}>
        <ShopPicker value={draftShop} onChange={setDraftShop} />
        <label class="grow">
          Id or e-mail <input name="q" value={draft} placeholder="42 or ada@example.com" onInput={(e) => setDraft((e.currentTarget as HTMLInputElement).value)} />
        </label>
        <button type="submit" disabled={draft.trim() === '' || draftShop === ''}>
          Find
        </button>
      </form>
      {q && shop && (id !== null ? <CustomerCard key={`${shop}/${id}`} shop={shop} id={id} /> : <ByEmail key={`${shop}/${q}`} shop={shop} email={q} />)}
    </main>
  )
}
