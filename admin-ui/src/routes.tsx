import type { ComponentType } from 'preact'

// The console's pages: one table that the router matches and the navigation lists. Each page is
// loaded when first shown (a dynamic import, which Vite builds as a chunk of its own).

/** What a page is given: the rest of the path after its own ("ev_123" under "events/"). */
export interface PageProps {
  rest: string
}

export interface Route {
  /** The first part of the path after /admin/ ("" for the overview). */
  path: string
  /** The navigation's label; none for a page reached only by a link (the event inspector). */
  nav?: string
  /** Whether the page is the one for a rest of the path ("events/ev_123"); a page without ignores any rest. */
  rest?: boolean
  load: () => Promise<ComponentType<PageProps>>
}

export const ROUTES: readonly Route[] = [
  { path: '', nav: 'Overview', load: () => import('./pages/overview.tsx').then((m) => m.Overview) },
  { path: 'health', nav: 'Webhook health', load: () => import('./pages/health.tsx').then((m) => m.Health) },
  { path: 'events', nav: 'Events', load: () => import('./pages/events.tsx').then((m) => m.Events) },
  {
    path: 'events',
    rest: true,
    // Keyed by the event: another event is a new inspector, with nothing left of the last one's replay.
    load: () => import('./pages/event.tsx').then((m) => ({ rest }: PageProps) => <m.EventInspector key={rest} id={decodeURIComponent(rest)} />),
  },
  { path: 'customer', nav: 'Customer', load: () => import('./pages/customer.tsx').then((m) => m.Customer) },
  { path: 'reports', nav: 'Reports', load: () => import('./pages/reports.tsx').then((m) => m.Reports) },
  { path: 'rules', nav: 'Rules', load: () => import('./pages/rules.tsx').then((m) => m.Rules) },
  { path: 'rewards', nav: 'Rewards', load: () => import('./pages/rewards.tsx').then((m) => m.Rewards) },
  { path: 'referrals', nav: 'Referrals', load: () => import('./pages/referrals.tsx').then((m) => m.Referrals) },
  { path: 'keys', nav: 'Keys', load: () => import('./pages/keys.tsx').then((m) => m.Keys) },
  { path: 'subscriptions', nav: 'Webhooks', load: () => import('./pages/subscriptions.tsx').then((m) => m.Subscriptions) },
  { path: 'audit', nav: 'Audit', load: () => import('./pages/audit.tsx').then((m) => m.Audit) },
]

/** The route of a path after /admin/ and the rest it leaves, or null: no such page. */
export function match(path: string): { route: Route; rest: string } | null {
  const [first = '', ...more] = path.split('/')
  const rest = more.join('/')
  // A rest goes to the page that takes one; a page that takes none ignores it ("customer/" is Customer).
  const route = (rest !== '' ? ROUTES.find((r) => r.path === first && r.rest) : undefined) ?? ROUTES.find((r) => r.path === first && !r.rest)
  return route ? { route, rest } : null
}

/** The navigation: the routes with a label, in the table's order. */
export const NAV = ROUTES.filter((r): r is Route & { nav: string } => r.nav !== undefined)
