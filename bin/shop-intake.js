#!/usr/bin/env node
// Runs the JavaScript in dist/, which `npm run build` compiles from src/ (npm ci and npm install
// build it, through `prepare`): no TypeScript is compiled at start. A checkout with no build, or
// with sources newer than the build (a developer's edit), runs the sources through tsx instead,
// which is slower to start but never stale.
import { existsSync, readdirSync, statSync } from 'node:fs'

const src = new URL('../src/', import.meta.url)
const built = new URL('../dist/cli/main.js', import.meta.url)

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

if (existsSync(built) && statSync(built).mtimeMs >= newest(src)) {
  await import(built.href)
} else {
  const { register } = await import('tsx/esm/api')
  register()
  await import('../src/cli/main.ts')
}
