#!/usr/bin/env node
// Runs the JavaScript in dist/, which `npm run build` makes from src/ (npm ci and npm install
// build it, through `prepare`): no TypeScript is compiled at start. A checkout with no build, or
// with sources newer than the build (a developer's edit), runs the sources through tsx instead,
// which is slower to start but never stale.
import { buildIsFresh } from '../src/build-is-fresh.js'

if (buildIsFresh()) {
  await import('../dist/cli/main.js')
} else {
  const { register } = await import('tsx/esm/api')
  register()
  await import('../src/cli/main.ts')
}
