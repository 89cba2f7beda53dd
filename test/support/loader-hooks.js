// Module hooks for the tests, lighter than tsx's (which resolve and load every module, the
// packages' included, through their own code: about twice the CPU to start a test file):
// - an import of a source under src/ loads its build in dist/ instead when the build is fresh
//   (every source's build newer than the source; npm test builds first), so that a test runs the
//   JavaScript the service ships, compiled once (TEST_FROM_SOURCES=1 runs the sources instead);
// - any other .ts (or .mts) file (the tests, test/support/, a source when the build is stale) is stripped
//   of its types by @swc/core, with a source map so that stack traces name the TypeScript lines.
// Every other module loads as node loads it, untouched.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { transformSync } from '@swc/core'

const SRC = new URL('../../src/', import.meta.url).href
const DIST = new URL('../../dist/', import.meta.url).href

/** Whether every source under `dir` (tests aside) has its build in dist/, compiled after the source's last change. */
function builtAfter(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`
    if (entry.isDirectory()) {
      if (!builtAfter(path)) return false
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) {
      const js = `${fileURLToPath(DIST)}${path.slice(fileURLToPath(SRC).length, -'.ts'.length)}.js`
      if (!existsSync(js) || statSync(js).mtimeMs < statSync(path).mtimeMs) return false
    }
  }
  return true
}

let built
/** Whether dist/ holds a build of every source, newer than it (decided once per process): all or none, so that no module is loaded twice. */
function buildIsFresh() {
  built ??= process.env.TEST_FROM_SOURCES !== '1' && existsSync(fileURLToPath(DIST)) && builtAfter(fileURLToPath(SRC).replace(/\/$/, ''))
  return built
}

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context)
  const { url } = resolved
  if (url.startsWith(SRC) && url.endsWith('.ts') && !url.endsWith('.test.ts') && buildIsFresh()) {
    return { ...resolved, url: `${DIST}${url.slice(SRC.length, -'.ts'.length)}.js`, format: 'module' }
  }
  return resolved
}

export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:') || !/\.m?ts$/.test(url)) return nextLoad(url, context)
  const filename = fileURLToPath(url)
  const { code } = transformSync(readFileSync(filename, 'utf8'), {
    filename,
    sourceMaps: 'inline',
    isModule: true,
    jsc: { parser: { syntax: 'typescript' }, target: 'es2022', transform: { useDefineForClassFields: true } },
  })
  return { format: 'module', source: code, shortCircuit: true }
}
