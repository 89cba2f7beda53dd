import { signal } from '@preact/signals'

// Pages are paths under /admin/ (the service answers index.html for each), moved between with the
// History API: a page can be bookmarked and reloaded, and Back works.

const BASE = '/admin/'

function current(): { path: string; params: URLSearchParams } {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : ''
  return { path: path.replace(/\/+$/, ''), params: new URLSearchParams(location.search) }
}

/** The page shown: the path after /admin/ ("events/ev_123") and the query. */
export const route = signal(current())

addEventListener('popstate', () => (route.value = current()))

/** Goes to `to` (a path after /admin/, with its query), adding a history entry unless `replace`. */
export function navigate(to: string, replace = false): void {
  const url = BASE + to.replace(/^\/+/, '')
  if (url === location.pathname + location.search) return
  if (replace) history.replaceState(null, '', url)
  else history.pushState(null, '', url)
  route.value = current()
  scrollTo(0, 0)
}

/** An href for `to`, and a click handler that navigates without a reload. */
export function link(to: string): { href: string; onClick: (e: MouseEvent) => void } {
  return {
    href: BASE + to.replace(/^\/+/, ''),
    onClick: (e: MouseEvent) => {
      if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return
      e.preventDefault()
      navigate(to)
    },
  }
}
