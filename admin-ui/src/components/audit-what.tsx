import type { ComponentChildren } from 'preact'
import { enc, type AuditEntry } from '../api.ts'
import { link } from '../router.ts'

// An audit entry in words: what the operator did, with links to what it was done to. The API
// keeps each action's details as JSON (src/routes/admin/*, src/cli/*); this reads them.

const text = (v: unknown) => (v === undefined || v === null ? '' : String(v))
const num = (v: unknown) => (typeof v === 'number' ? v : Number(v))

function Customer({ shop, id }: { shop: string | null; id: unknown }) {
  const label = `customer ${text(id)}`
  return shop ? <a {...link(`customer?shop=${enc(shop)}&q=${enc(text(id))}`)}>{label}</a> : <>{label}</>
}

function Event({ id }: { id: unknown }) {
  return <a {...link(`events/${enc(text(id))}`)}>{text(id)}</a>
}

function Key({ shop, id, hint }: { shop: string | null; id: string | null; hint: unknown }) {
  const label = `key ${text(id)}${hint ? ` (${text(hint)})` : ''}`
  return shop ? <a {...link(`keys?shop=${enc(shop)}`)}>{label}</a> : <>{label}</>
}

function Subscription({ shop, id }: { shop: string | null; id: string | null }) {
  const label = `webhook subscription ${text(id)}`
  return shop ? <a {...link(`subscriptions?shop=${enc(shop)}`)}>{label}</a> : <>{label}</>
}

/** Where a subscription sends: its URL, or Klaviyo and the key's hint (the audit log never holds a key). */
const destination = (d: Record<string, unknown>) =>
  d.destination === 'klaviyo' ? (
    <>
      Klaviyo (key <code>{text(d.private_key)}</code>)
    </>
  ) : (
    <code class="url">{text(d.url)}</code>
  )

/** A VIP tier as the command line takes it: NAME:POINTS, and :MULTIPLIER when it is not 1. */
function tierValue(v: unknown): string | null {
  if (typeof v !== 'object' || v === null || !('name' in v) || !('points' in v)) return null
  const { name, points, multiplier } = v as { name: unknown; points: unknown; multiplier?: unknown }
  return `${text(name)}:${text(points)}${multiplier === undefined || multiplier === 1 ? '' : `:${text(multiplier)}`}`
}

/** A value of a rule field as the command line would take it: a list (tiers, tags) and a map (tag tiers, currency rates) comma-separated. */
const ruleValue = (v: unknown): string =>
  Array.isArray(v)
    ? v.map((item) => tierValue(item) ?? ruleValue(item)).join(', ') || 'none'
    : typeof v === 'object' && v !== null
      ? Object.entries(v)
          .map(([k, x]) => `${k}=${ruleValue(x)}`)
          .join(', ') || 'none'
      : text(v)

export function AuditWhat({ entry }: { entry: AuditEntry }): ComponentChildren {
  const d = (entry.detail ?? {}) as Record<string, unknown>
  const { shop, target } = entry
  switch (entry.action) {
    case 'session.sign-in':
      return 'signed in'
    case 'session.sign-out':
      return 'signed out'
    case 'points.adjust': {
      const points = num(d.points)
      return (
        <>
          {points < 0 ? `took ${-points} points from ` : `gave ${points} points to `}
          <Customer shop={shop} id={target} />: {text(d.reason)}
        </>
      )
    }
    case 'redemption.cancel':
      return (
        <>
          cancelled redemption {text(d.reference)} of <Customer shop={shop} id={d.customer_id} />: {text(d.points)} points back
        </>
      )
    case 'event.replay':
      return (
        <>
          replayed event <Event id={target} />: {text(d.outcome)}, as event <Event id={d.event_id} />
        </>
      )
    case 'key.create':
      return (
        <>
          created <Key shop={shop} id={target} hint={d.hint} />
          {d.shop_created === true ? ', and the shop' : ''}
        </>
      )
    case 'key.revoke':
      return (
        <>
          revoked <Key shop={shop} id={target} hint={d.hint} />
        </>
      )
    case 'rule.set': {
      const changes = Object.entries((d.changes ?? {}) as Record<string, { from?: unknown; to?: unknown }>)
      const label = `the points rule, version ${text(d.version)}`
      return (
        <>
          set {shop ? <a {...link(`rules?shop=${enc(shop)}`)}>{label}</a> : label}:{' '}
          {changes.map(([field, c]) => `${field} ${ruleValue(c.from)} → ${ruleValue(c.to)}`).join('; ') || 'no change'}
        </>
      )
    }
    case 'reward.create':
    case 'reward.update':
    case 'reward.remove':
    case 'reward.codes': {
      const label = `reward ${text(target)}${d.name ? ` (${text(d.name)})` : ''}`
      const reward = shop ? <a {...link(`rewards?shop=${enc(shop)}`)}>{label}</a> : label
      if (entry.action === 'reward.create')
        return (
          <>
            added {reward}, {text(d.points)} points
          </>
        )
      if (entry.action === 'reward.remove') return <>removed {reward}: no claim takes it from now on</>
      if (entry.action === 'reward.codes')
        return (
          <>
            uploaded codes to {reward}: {text(d.added)} added, {text(d.duplicates)} duplicates left out
            {typeof d.handed_out === 'number' && d.handed_out > 0 && ` (${d.handed_out} handed out by claims already)`}
          </>
        )
      const changes = Object.entries((d.changes ?? {}) as Record<string, { from?: unknown; to?: unknown }>)
      return (
        <>
          changed {reward}: {changes.map(([field, c]) => `${field} ${ruleValue(c.from)} → ${ruleValue(c.to)}`).join('; ')}
        </>
      )
    }
    case 'points.import':
      return (
        `imported balances: ${text(d.lines)} lines, ${text(d.customers_created)} new customers, ${text(d.entries)} entries (${text(d.points_added)} points added, ${text(d.points_taken)} taken back)` +
        // The operator's choice when lines' ids and e-mails disagreed with the shop's customers.
        (Number(d.mismatched ?? 0) > 0
          ? `; ${text(d.mismatched)} lines whose id and e-mail disagreed with the shop's customers ${d.on_mismatch === 'keep-stored' ? 'left out' : 'imported as written'}`
          : '')
      )
    case 'subscription.create':
      return (
        <>
          subscribed <Subscription shop={shop} id={target} />, {destination(d)}, to {Array.isArray(d.types) ? d.types.map(text).join(', ') : text(d.types)}
        </>
      )
    case 'subscription.delete':
      return (
        <>
          removed <Subscription shop={shop} id={target} />, {destination(d)}
        </>
      )
    case 'subscription.replay':
      return (
        <>
          replayed <Subscription shop={shop} id={target} /> from after position {text(d.after)}
        </>
      )
    case 'subscription.rotate':
      return (
        <>
          rotated the signing secret of <Subscription shop={shop} id={target} />; the previous one signs too for {text(d.grace_hours)} hours
        </>
      )
    case 'admin.create':
      return `created operator ${text(target)}, ${text(d.name)}, ${d.role === 'viewer' ? 'a viewer' : 'an operator'}`
    case 'admin.revoke':
      return `revoked operator ${text(target)}, ${text(d.name)}`
    default:
      // An action this page does not know yet: its name and fields, still as words.
      return `${entry.action}${target ? ` ${target}` : ''}${
        Object.keys(d).length > 0
          ? `: ${Object.entries(d)
              .map(([k, v]) => `${k} ${ruleValue(v)}`)
              .join(', ')}`
          : ''
      }`
  }
}
