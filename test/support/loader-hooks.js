// Module hooks for the tests, lighter than tsx's (which resolve and load every module, the
// packages' included, through their own code: about twice the CPU to start a test file):
// - an import of a source under src/ loads its build in dist/ instead when the build is fresh
//   (every file of dist/ newer than every source under src/, as bin/shop-intake.js decides;
//   npm test builds first), so that a test runs the JavaScript the service ships, compiled once;
// - any other .ts (or .mts) file (the tests, test/support/, a source when the build is stale) is stripped
//   of its types by @swc/core, with a source map so that stack traces name the TypeScript lines.
// Every other module loads as node loads it, untouched.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { transformSync } from '@swc/core'

const SRC = new URL('../../src/', import.meta.url).href
const DIST = new URL('../../dist/', import.meta.url).href

/** The newest and oldest modification times of the files under `dir` that `keep` keeps. */
function times(dir, keep, acc = { newest: 0, oldest: Infinity }) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`
    if (entry.isDirectory()) times(path, keep, acc)
    else if (keep(entry.name)) {
      const mtime = statSync(path).mtimeMs
      acc.newest = Math.max(acc.newest, mtime)
      acc.oldest = Math.min(acc.oldest, mtime)
    }
  }
  return acc
}

let built
/** Whether dist/ holds a build newer than every source (decided once per process). */
function buildIsFresh() {
  if (built !== undefined) return built
  const dist = fileURLToPath(DIST)
  if (process.env.TEST_FROM_SOURCES === '1' || !existsSync(dist)) return (built = false)
  const sources = times(fileURLToPath(SRC), (name) => name.endsWith('.ts') && !name.endsWith('.test.ts'))
  return (built = times(dist, (name) => name.endsWith('.js')).oldest >= sources.newest)
}

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context)
  const { url } = resolved
  if (url.startsWith(SRC) && url.endsWith('.ts') && !url.endsWith('.test.ts') && buildIsFresh()) {
    const js = `${DIST}${url.slice(SRC.length, -'.ts'.length)}.js`
    if (existsSync(new URL(js))) return { ...resolved, url: js, format: 'module' }
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
