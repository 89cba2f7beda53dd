import { render } from 'preact'
import { App } from './app.tsx'
import { checkSession, session } from './session.ts'
import './style.css'

checkSession().catch((err: unknown) => {
  console.warn('could not check the session', err)
  session.value = null
})
render(<App />, document.getElementById('root')!)
