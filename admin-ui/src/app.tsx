import { useEffect } from 'preact/hooks'
import { ErrorBox, loadShops, shops } from './components/common.tsx'
import { Audit } from './pages/audit.tsx'
import { Customer } from './pages/customer.tsx'
import { EventInspector } from './pages/event.tsx'
import { Events } from './pages/events.tsx'
import { Keys } from './pages/keys.tsx'
import { Overview } from './pages/overview.tsx'
import { Reports } from './pages/reports.tsx'
import { Rewards } from './pages/rewards.tsx'
import { Rules } from './pages/rules.tsx'
import { SignIn } from './pages/sign-in.tsx'
import { Subscriptions } from './pages/subscriptions.tsx'
import { link, route } from './router.ts'
import { session, signOut, signOutError } from './session.ts'

const NAV = [
  ['', 'Overview'],
  ['events', 'Events'],
  ['customer', 'Customer'],
  ['reports', 'Reports'],
  ['rules', 'Rules'],
  ['rewards', 'Rewards'],
  ['keys', 'Keys'],
  ['subscriptions', 'Webhooks'],
  ['audit', 'Audit'],
] as const

function Page() {
  const path = route.value.path
  const [first, ...rest] = path.split('/')
  switch (first) {
    case '':
      return <Overview />
    case 'events':
      // Keyed by the event: another event is a new inspector, with nothing left of the last one's replay.
      return rest.length > 0 ? <EventInspector key={rest.join('/')} id={decodeURIComponent(rest.join('/'))} /> : <Events />
    case 'customer':
      return <Customer />
    case 'reports':
      return <Reports />
    case 'rules':
      return <Rules />
    case 'rewards':
      return <Rewards />
    case 'keys':
      return <Keys />
    case 'subscriptions':
      return <Subscriptions />
    case 'audit':
      return <Audit />
    default:
      return (
        <main>
          <h1>Not found</h1>
          <p>
            No page <code>/admin/{path}</code>. <a {...link('')}>Overview</a>
          </p>
        </main>
      )
  }
}

export function App() {
  const who = session.value
  useEffect(() => {
    if (who && shops.value === null) loadShops().catch(() => {})
  }, [who])
  if (who === undefined) return <p class="muted loading">Loading…</p>
  if (who === null) return <SignIn />
  const section = route.value.path.split('/')[0]
  return (
    <>
      <nav class="top">
        <span class="brand">shop-intake</span>
        {NAV.map(([to, label]) => (
          <a {...link(to)} class={section === to ? 'active' : ''}>
            {label}
          </a>
        ))}
        <span class="who">
          signed in as <strong data-operator>{who.name}</strong>
          {who.role === 'viewer' && (
            <span class="badge role" title="a viewer may look, not change">
              viewer
            </span>
          )}
        </span>
        <button type="button" name="sign-out" onClick={() => void signOut()}>
          Sign out
        </button>
      </nav>
      {signOutError.value !== null && (
        <div class="sign-out-failed" data-sign-out="refused">
          <p>
            <strong>Not signed out.</strong> The service did not end the session, so it is still active here and for anyone holding its cookie. Try again.
          </p>
          <ErrorBox error={signOutError.value} />
        </div>
      )}
      <Page />
    </>
  )
}
