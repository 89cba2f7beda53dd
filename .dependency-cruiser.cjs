// The import graph of src/ (npm run lint:deps, part of npm test): no cycles, and no import that
// runs back up the layers below. A layer may import any layer under it, never one above it.
// Bottom to top (DEVELOPERS.md, Layout, says what each folder holds):
//
//   core     domain/, loyalty/ (over domain/), schemas/, config.ts: pure rules, shapes, settings;
//            clock.ts, the one clock every layer is given; package-root.ts, where the package lies;
//            build-is-fresh.js, whether its build in dist/ is fresh (bin/shop-intake.js asks too)
//   batch    batch/: the decider
//   migrations  migrations/: the schema's history, with the column types it asks of a database
//   db       db/ (connection, dialects in db/sqlite/ and db/postgres/, schema, backup, applying
//            the migrations), rate-limit/ (the rate limit's counters, Redis)
//   repos    repos/: the queries the routes, jobs and the command line read and write through
//   write    write/ (the write path: queue, unit of work, load, save, statements, with
//            write/sqlite/ and write/postgres/), keys/ (issuing keys through the repositories)
//   jobs     jobs/ (background loops), rewards/ (the catalogue, pools and the points import:
//            what the admin API and the CLI share)
//   feed     feed/: the change feed after commit, which wires the relay and the sender of jobs/
//   http     http/: the protocol plumbing routes share
//   services services.ts: what buildApp gives the routes
//   routes   routes/
//   entry    app.ts (with parts.ts, the order its parts start and stop in), server.ts, cluster*.ts, cli/

const LAYERS = [
  ['core', ['src/domain/', 'src/schemas/', 'src/loyalty/', 'src/config\\.ts$', 'src/clock\\.ts$', 'src/package-root\\.ts$', 'src/build-is-fresh\\.js$']],
  ['batch', ['src/batch/']],
  ['migrations', ['src/migrations/']],
  ['db', ['src/db/', 'src/rate-limit/']],
  ['repos', ['src/repos/']],
  ['write', ['src/write/', 'src/keys/']],
  ['jobs', ['src/jobs/', 'src/rewards/']],
  ['feed', ['src/feed/']],
  ['http', ['src/http/']],
  ['services', ['src/services\\.ts$']],
  ['routes', ['src/routes/']],
  ['entry', ['src/app\\.ts$', 'src/parts\\.ts$', 'src/server\\.ts$', 'src/cluster[\\w-]*\\.ts$', 'src/cli/']],
]

const anyOf = (paths) => `^(${paths.join('|')})`

const upward = LAYERS.slice(0, -1).map(([name, paths], i) => ({
  name: `${name}-not-up`,
  comment: `${name} imports nothing from the layers above it (${LAYERS.slice(i + 1)
    .map(([n]) => n)
    .join(', ')})`,
  severity: 'error',
  from: { path: anyOf(paths) },
  to: { path: anyOf(LAYERS.slice(i + 1).flatMap(([, p]) => p)) },
}))

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'a cycle ties its files into one: whichever is loaded first sees the others half-defined',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'domain-not-loyalty',
      comment: 'inside the core: the points rules build on the general rules, not the other way round',
      severity: 'error',
      from: { path: '^src/domain/' },
      to: { path: '^src/loyalty/' },
    },
    {
      name: 'domain-values-are-leaves',
      comment: 'inside the core: money.ts and time.ts are the values every layer and the schemas use, so they import nothing of src/ (DEVELOPERS.md, Layers)',
      severity: 'error',
      from: { path: '^src/domain/(money|time)\\.ts$' },
      to: { path: '^src/' },
    },
    {
      name: 'schemas-take-values-only',
      comment: "inside the core: the schemas take the values' definitions from domain/, never the record rules, which are built on the schemas",
      severity: 'error',
      from: { path: '^src/schemas/' },
      to: { path: '^src/domain/', pathNot: '^src/domain/(money|time)\\.ts$' },
    },
    {
      name: 'src-not-bin',
      comment: 'bin/ holds the command, which runs src/ (or its build): above every layer, so nothing under src/ imports it',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^bin/' },
    },
    {
      name: 'every-file-in-a-layer',
      comment: 'a new top-level folder or file of src/ gets its place in LAYERS',
      severity: 'error',
      from: { path: '^src/', pathNot: anyOf(LAYERS.flatMap(([, p]) => p)) },
      to: {},
    },
    ...upward,
  ],
  options: {
    // TypeScript 7 has no compiler API for dependency-cruiser: swc parses, and sees type-only imports too.
    parser: 'swc',
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['\\.test\\.ts$', 'node_modules'] },
  },
}
