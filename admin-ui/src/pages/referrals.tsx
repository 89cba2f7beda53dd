import { api, enc, type Referral } from '../api.ts'
import { defaultShop, ErrorBox, ShopPicker } from '../components/common.tsx'
import { time } from '../format.ts'
import { useData } from '../hooks/use-data.ts'
import { navigate, route } from '../router.ts'

// A shop's referrals (docs/program/referrals.md): each one's state and why, newest claim first,
// and the refusals (a self-referral, the cap, not a first order, …) listed apart for an operator
// to review, and the friend's reward code struck through when it is void (the referral was refused
// after the code was handed out). Read only: the write path decides them; the friend's e-mail is
// not kept, so not shown.

/** Why a referral is where it is, in words. */
const WHY: Record<string, string> = {
  awaiting_first_order: "waiting for the friend's first order",
  awaiting_payment: 'the first order is not paid yet',
  rewarded: 'rewarded',
  self_referral: "self-referral: the referrer's own e-mail or order",
  not_first_order: 'not a first order: the friend had ordered before the claim',
  below_minimum: 'the first order was below the minimum subtotal',
  other_currency: 'the first order was in a currency the minimum subtotal does not name',
  too_late: "the first order came after the referral's days",
  later_claim: "another referrer's later claim of the friend came before the first order",
  cap_reached: "the referrer's monthly cap was reached",
  refunded: 'taken back: the first order was refunded',
  cancelled: 'taken back: the first order was cancelled',
}

function ReferralTable({ items, label }: { items: Referral[]; label: string }) {
  if (items.length === 0) return <p class="muted">No {label}.</p>
  return (
    <table class="referrals" data-list={label}>
      <thead>
        <tr>
          <th>claimed</th>
          <th>referrer</th>
          <th>state</th>
          <th>why</th>
          <th>first order</th>
          <th>referrer's points</th>
          <th>friend</th>
          <th>updated</th>
        </tr>
      </thead>
      <tbody>
        {items.map((r) => (
          <tr data-status={r.status} data-reason={r.reason}>
            <td>{time(r.claimed_at)}</td>
            <td>{r.referrer_id}</td>
            <td>{r.status}</td>
            <td>{WHY[r.reason] ?? r.reason}</td>
            <td>{r.order_id ?? ''}</td>
            <td>{r.referrer_points}</td>
            <td>
              {r.reward_code !== null &&
                (r.reward_code_void ? (
                  <span data-code-void>
                    <s>{r.reward_code}</s> void: not to be honoured
                  </span>
                ) : (
                  r.reward_code
                ))}
              {r.friend_customer_id !== null ? ` customer ${r.friend_customer_id}: ${r.friend_points} points` : ''}
            </td>
            <td>{time(r.updated_at)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  )
}

export function Referrals() {
  const shop = route.value.params.get('shop') ?? defaultShop()
  const loaded = useData(
    shop
      ? () =>
          Promise.all([
            api('GET', '/v3/admin/shops/{shop}/referrals', { params: { shop }, query: { limit: 100, status: 'refused' } }),
            api('GET', '/v3/admin/shops/{shop}/referrals', { params: { shop }, query: { limit: 100 } }),
          ])
      : null,
    [shop],
    { reset: true },
  )
  return (
    <main>
      <div class="toolbar">
        <h1>Referrals</h1>
        <ShopPicker value={shop} onChange={(s) => navigate(`referrals?shop=${enc(s)}`)} />
        <button type="button" onClick={() => loaded.refresh()}>
          Refresh
        </button>
      </div>
      <ErrorBox error={loaded.error} />
      {loaded.data && (
        <>
          <h2>Refused, for review</h2>
          <ReferralTable items={loaded.data[0].items} label="refusals" />
          <h2>All referrals</h2>
          <ReferralTable items={loaded.data[1].items} label="referrals" />
        </>
      )}
    </main>
  )
}
