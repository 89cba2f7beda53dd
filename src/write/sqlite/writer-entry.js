// Worker bootstrap when the service runs from its TypeScript sources (tests, `node --import tsx`):
// the thread runs the build in dist/ when it is fresh (newer than every source, as
// bin/shop-intake.js decides for the command line), since compiling the thread's sources through
// tsx takes seconds for each app; with no build, or an older one, it runs the sources through tsx.
import { existsSync, readdirSync, statSync } from 'node:fs'

const built = new URL('../../../dist/write/sqlite/writer-thread.js', import.meta.url)

/** The newest modification time of the sources under `dir`, tests aside. */
function newest(dir) {
  let latest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const url = new URL(entry.name + (entry.isDirectory() ? '/' : ''), dir)
    if (entry.isDirectory()) latest = Math.max(latest, newest(url))
    else if (!entry.name.endsWith('.test.ts')) latest = Math.max(latest, statSync(url).mtimeMs)
  }
  return latest
}

if (existsSync(built) && statSync(built).mtimeMs >= newest(new URL('../../', import.meta.url))) {
  await import(built.href)
} else {
  const { register } = await import('tsx/esm/api')
  register()
  await import('./writer-thread.ts')
}
