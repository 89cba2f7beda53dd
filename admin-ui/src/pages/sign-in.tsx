import { useState } from 'preact/hooks'
import { signIn } from '../session.ts'
import { ErrorBox } from '../components/common.tsx'

export function SignIn() {
  const [key, setKey] = useState('')
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)
  const submit = async (e: Event) => {
    e.preventDefault()
    setBusy(true)
    setError(null)
    try {
      await signIn(key.trim())
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  return (
    <main class="sign-in">
      <h1>shop-intake console</h1>
      <form onSubmit={submit}>
        <label>
          Admin key
          <input
            type="password"
            name="key"
            autocomplete="off"
            placeholder="ak_…"
            autoFocus
            required
            value={key}
            onInput={(e) => setKey((e.currentTarget as HTMLInputElement).value)}
          />
        </label>
        <button type="submit" disabled={busy || key.trim() === ''}>
          Sign in
        </button>
        <ErrorBox error={error} />
        <p class="hint">
          An operator's key comes from <code>npx shop-intake admins create --name NAME</code>.
        </p>
      </form>
    </main>
  )
}
