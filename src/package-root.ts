import { existsSync } from 'node:fs'

// Where the package lies (the folder of its package.json), found from this module's own place,
// which depends on how the service runs: src/ through tsx, a module of dist/, or the shared chunk
// of dist/chunks/ the build put it in (scripts/build.mjs). Files the service reads or starts (its
// package.json, the console's and the writer thread's builds) are named from here, never from a
// module's own import.meta.url.

function packageRoot(): URL {
  let dir = new URL('.', import.meta.url)
  while (!existsSync(new URL('package.json', dir))) {
    const up = new URL('..', dir)
    if (up.href === dir.href) throw new Error(`no package.json above ${import.meta.url}`)
    dir = up
  }
  return dir
}

/** The package's folder, as a URL ending in a slash. */
export const PACKAGE_ROOT: URL = packageRoot()

/** Whether the service runs from its TypeScript sources (through tsx) rather than from dist/. */
export const FROM_SOURCES: boolean = import.meta.url.endsWith('.ts')
