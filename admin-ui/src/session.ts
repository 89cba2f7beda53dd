import { computed, signal } from '@preact/signals'
import { api, ApiError, setUnauthorizedHandler, type Session } from './api.ts'

// The session is an HttpOnly cookie the page cannot read. What the page keeps (localStorage) is
// only a hint that it signed in, so that a fresh visit shows the sign-in form without first
// asking the API a question whose answer would be a 401.

const HINT = 'shop-intake.signed-in'

/** The signed-in operator; null when signed out; undefined while checking. */
export const session = signal<Session | null | undefined>(undefined)

/** Whether the operator may change things: a viewer may only look, so no page offers them a change (the API refuses it anyway). */
export const canChange = computed(() => session.value?.role === 'operator')

function forget(): void {
  signOutError.value = null
  localStorage.removeItem(HINT)
  session.value = null
}

setUnauthorizedHandler(forget)

export async function checkSession(): Promise<void> {
  if (localStorage.getItem(HINT) === null) {
    session.value = null
    return
  }
  try {
    session.value = await api('GET', '/v3/admin/session')
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return forget()
    throw err
  }
}

export async function signIn(key: string): Promise<void> {
  const s = await api('POST', '/v3/admin/session', { body: { key } })
  localStorage.setItem(HINT, '1')
  session.value = s
}

/** Why the last sign-out did not happen (the session lives on); null when none failed. */
export const signOutError = signal<unknown>(null)

/** Ends the session; the page forgets it only once the service confirms (or says it had ended already). */
export async function signOut(): Promise<void> {
  signOutError.value = null
  try {
    await api('DELETE', '/v3/admin/session')
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return forget()
    signOutError.value = err
    return
  }
  forget()
}
