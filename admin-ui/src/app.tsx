import { useEffect } from 'preact/hooks'
import { ErrorBox, loadShops, shops } from './components/common.tsx'
import { useData } from './hooks/use-data.ts'
import { SignIn } from './pages/sign-in.tsx'
import { link, route } from './router.ts'
import { match, NAV, type Route } from './routes.tsx'
import { session, signOut, signOutError } from './session.ts'

/** A page of the route table, loaded on first use (its chunk), then shown with the rest of its path. */
function LazyPage({ page, rest }: { page: Route; rest: string }) {
  const { data: Page, error } = useData(() => page.load(), [page])
  if (error) return <ErrorBox error={error} />
  if (!Page) return <p class="muted loading">Loading…</p>
  return <Page rest={rest} />
}

function Page() {
  const path = route.value.path
  const found = match(path)
  if (found) return <LazyPage key={found.route.path + (found.route.rest ? '/' : '')} page={found.route} rest={found.rest} />
  return (
    <main>
      <h1>Not found</h1>
      <p>
        No page <code>/admin/{path}</code>. <a {...link('')}>Overview</a>
      </p>
    </main>
  )
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
        {NAV.map((r) => (
          <a {...link(r.path)} class={section === r.path ? 'active' : ''}>
            {r.nav}
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
