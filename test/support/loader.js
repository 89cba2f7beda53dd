// The test runner's module loader (`node --import ./test/support/loader.js --test …`, as npm test
// runs): the hooks of loader-hooks.js. Not in worker threads, which inherit this flag: the
// SQLite writer thread runs dist/ when the tests do, and registers tsx itself otherwise.
import { register } from 'node:module'
import { isMainThread } from 'node:worker_threads'

if (isMainThread) {
  process.setSourceMapsEnabled(true)
  register('./loader-hooks.js', import.meta.url)
}
