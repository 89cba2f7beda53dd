// Mutation testing of the pure rules (StrykerJS), with the unit tests beside them.
//   npm run mutate                                  every file below, each against its own unit tests
//   MUTATE=src/loyalty/rule.ts npm run mutate       one file
// Each file is scored against the unit tests beside it (the measure), so a run of one
// file runs only those tests; results are kept per file in reports/ and reused when neither the
// file nor its tests changed (incremental mode).
// tsconfigFile names no file on purpose: Stryker would rewrite tsconfig.json with the TypeScript
// API, which TypeScript 7 no longer has, and tsx needs no rewrite.

/** Each mutated file and the unit tests that judge it. */
export const TARGETS = {
  'src/domain/money.ts': ['src/domain/money.test.ts'],
  'src/domain/time.ts': ['src/domain/time.test.ts'],
  'src/domain/merge.ts': ['src/domain/merge.test.ts', 'src/domain/merge-rules.test.ts'],
  'src/loyalty/rule.ts': ['src/loyalty/rule.test.ts'],
  'src/loyalty/points.ts': ['src/loyalty/points.test.ts', 'src/loyalty/points-cap.test.ts'],
  'src/loyalty/ledger-plan.ts': ['src/loyalty/ledger-plan.test.ts'],
  'src/loyalty/tiers.ts': ['src/loyalty/tiers.test.ts'],
  'src/batch/decide.ts': ['src/batch/decide.test.ts', 'src/batch/decide-rules.test.ts', 'src/batch/decide-settle.test.ts', 'src/batch/decide-redact.test.ts'],
  'src/batch/decide-webhooks.ts': [
    'src/batch/decide.test.ts',
    'src/batch/decide-rules.test.ts',
    'src/batch/decide-settle.test.ts',
    'src/batch/decide-redact.test.ts',
  ],
  'src/batch/evolve.ts': ['src/batch/evolve.test.ts'],
  'src/batch/decide-points.ts': ['src/batch/decide-points.test.ts', 'src/batch/decide-adjust.test.ts', 'src/batch/decide-limits.test.ts'],
  'src/batch/decide-loyalty.ts': ['src/batch/decide-loyalty.test.ts'],
  'src/batch/decide-rewards.ts': ['src/batch/decide-rewards.test.ts'],
  'src/batch/decide-import.ts': ['src/batch/decide-import.test.ts'],
  'src/batch/decide-referrals.ts': [
    'src/batch/decide-referrals.test.ts',
    'src/batch/decide-referrals-zone.test.ts',
    'src/batch/decide-referrals-claims.test.ts',
  ],
}

const target = process.env.MUTATE
if (target !== undefined && !(target in TARGETS)) {
  throw new Error(`MUTATE=${target} is not one of: ${Object.keys(TARGETS).join(', ')}`)
}
const files = target === undefined ? Object.keys(TARGETS) : [target]
const name =
  target === undefined
    ? 'all'
    : target
        .replace(/^src\//, '')
        .replace(/\.ts$/, '')
        .replaceAll('/', '-')

export default {
  testRunner: 'tap',
  tap: {
    testFiles: [...new Set(files.flatMap((file) => TARGETS[file]))],
    nodeArgs: ['--import', 'tsx', '--test-reporter=tap', '-r', '{{hookFile}}', '{{testFile}}'],
    forceBail: true,
  },
  mutate: files,
  coverageAnalysis: 'perTest',
  checkers: [],
  tsconfigFile: 'no-tsconfig-rewrite',
  concurrency: Number(process.env.MUTATE_CONCURRENCY ?? 2),
  timeoutMS: 20_000,
  incremental: true,
  incrementalFile: `reports/stryker-incremental-${name}.json`,
  reporters: ['clear-text', 'html', 'json', 'progress'],
  htmlReporter: { fileName: `reports/mutation/${name}.html` },
  jsonReporter: { fileName: `reports/mutation/${name}.json` },
  thresholds: { high: 95, low: 90, break: 95 },
  tempDirName: '.stryker-tmp',
  ignorePatterns: ['data', 'bench/results', 'reports', 'scratch'],
}
