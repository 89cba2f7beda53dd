// Whether dist/ holds a build of every source under src/ (tests aside), each made after its source's
// last change: then the command line (bin/shop-intake.js), the SQLite writer thread started from the
// sources (src/write/thread/writer-entry.js) and the tests (test/support/loader-hooks.js) run the
// build; otherwise they run the sources, slower but never stale. JavaScript, never built, so that
// it runs before anyone knows whether the build can; in src/, at the bottom of its layers, since
// the writer thread's bootstrap below the command line asks it too.
import { existsSync, readdirSync, statSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

function builtAfter(dir) {
  for (const entry of readdirSync(`${ROOT}src/${dir}`, { withFileTypes: true })) {
    const path = `${dir}${entry.name}`
    if (entry.isDirectory()) {
      if (!builtAfter(`${path}/`)) return false
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) {
      const js = `${ROOT}dist/${path.slice(0, -'.ts'.length)}.js`
      if (!existsSync(js) || statSync(js).mtimeMs < statSync(`${ROOT}src/${path}`).mtimeMs) return false
    }
  }
  return true
}

export function buildIsFresh() {
  return existsSync(`${ROOT}dist`) && builtAfter('')
}
