// Worker bootstrap when the service runs from its TypeScript sources (tests, `node --import tsx`):
// the thread runs the build in dist/ when it is fresh (src/build-is-fresh.js, as the command line
// decides), since compiling the thread's sources through tsx takes seconds for each app; with no
// build, or an older one, it runs the sources through tsx.
import { buildIsFresh } from '../../build-is-fresh.js'

if (buildIsFresh()) {
  await import('../../../dist/write/thread/writer-thread.js')
} else {
  const { register } = await import('tsx/esm/api')
  register()
  await import('./writer-thread.ts')
}
