// Module hooks for the tests, lighter than tsx's (which resolve and load every module, the
// packages' included, through their own code: about twice the CPU to start a test file):
// - an import of a source under src/ loads its build in dist/ instead when the build is fresh
//   (every source's build newer than the source; npm test builds first), so that a test runs the
//   JavaScript the service ships, compiled once (TEST_FROM_SOURCES=1 runs the sources instead);
// - any other .ts (or .mts) file (the tests, test/support/, a source when the build is stale) is stripped
//   of its types by @swc/core, with a source map so that stack traces name the TypeScript lines.
// Every other module loads as node loads it, untouched.
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { transformSync } from '@swc/core'
import { buildIsFresh as isFresh } from '../../src/build-is-fresh.js'

const SRC = new URL('../../src/', import.meta.url).href
const DIST = new URL('../../dist/', import.meta.url).href

let built
/** Whether dist/ holds a fresh build (src/build-is-fresh.js), decided once per process: all or none, so that no module is loaded twice. */
function buildIsFresh() {
  built ??= process.env.TEST_FROM_SOURCES !== '1' && isFresh()
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
