#!/usr/bin/env node
// The service's build (`npm run build`, and `prepare`, which npm ci and npm install run): the
// JavaScript in dist/ that bin/shop-intake.js, the SQLite writer thread and the tests run, so that no
// process compiles TypeScript at start. Types are checked apart, by `tsc -p .` in `npm run lint`.
//
// esbuild, one output a source (dist/<path>.js, each with its source map), so that every module a
// process or a test names is there; with code splitting, the code two of them share lies once in
// dist/chunks/ and runs once a process, as it would unbundled. The packages that are many small
// modules (typebox alone is 680 files, kysely 264, ajv, fastify, nats, ioredis) are bundled in too:
// opening and linking some 2,300 modules was most of a process's start, and every test file, every
// command and every server the tests start paid it (importing src/app.ts: 1.45 s of CPU, 0.7 s
// bundled). The packages left out are those that must be loaded from their own folder: native
// code, worker-thread files, the TypeScript loaders.
import { rmSync } from 'node:fs'
import { readdir } from 'node:fs/promises'
import { build } from 'esbuild'

const EXTERNAL = [
  'better-sqlite3', // native
  'pg', // optional native binding (pg-native); the tests use it beside the service
  'pg-native',
  'pino', // its transports start worker threads from files of its own
  'thread-stream',
  '@fastify/static', // serves files relative to its own folder
  'tsx',
  '@swc/core',
  'esbuild',
]

const sources = (await readdir('src', { recursive: true }))
  .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts') && !file.endsWith('.d.ts'))
  .map((file) => `src/${file}`)

rmSync('dist', { recursive: true, force: true })
await build({
  entryPoints: sources,
  outdir: 'dist',
  outbase: 'src',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  sourcesContent: false,
  external: EXTERNAL,
  chunkNames: 'chunks/[name]-[hash]',
  // The CommonJS packages bundled in call require() for node's modules and their own JSON files.
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  logLevel: 'warning',
})
