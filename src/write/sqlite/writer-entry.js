// Worker bootstrap: the writer thread runs the TypeScript sources through tsx, like bin/shop-intake.js.
import { register } from 'tsx/esm/api'

register()
await import('./writer-thread.ts')
