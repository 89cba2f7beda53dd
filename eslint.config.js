// ESLint with the TypeScript rules (typescript-eslint), part of `npm run lint` and so of `npm test`.
// typescript-eslint reads TypeScript through its JavaScript API, which TypeScript 7 does not have:
// the `typescript` package is TypeScript 6's API (@typescript/typescript6), and `tsc` is TypeScript 7
// (@typescript/native), as TypeScript 7's release notes set out for tools that need the API.
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  {
    ignores: [
      'dist/',
      'admin-ui/dist/',
      'widget/dist/',
      'build/',
      'reports/',
      'node_modules/',
      'test-screenshots/',
      '.stryker-tmp/',
      'admin-ui/src/api-types.ts',
    ],
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        // Node's globals, and the browser's for the dashboard: the TypeScript compiler checks each file's own.
        process: 'readonly',
        Buffer: 'readonly',
        console: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        URL: 'readonly',
      },
    },
    rules: {
      // An unused argument or binding named with a leading underscore is kept on purpose (a callback's shape).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/clock.ts', 'src/package-root.ts', 'src/**/*.test.ts'],
    // One clock (src/clock.ts), made at start and passed down: nothing else reads the system's time.
    // new Date(x) with an argument (parsing, formatting) stays; tests (src/**/*.test.ts, test/) and
    // bench/ drive and measure time themselves. And files are found from the package's folder
    // (src/package-root.ts): the build may put a module in a shared chunk of dist/chunks/.
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "NewExpression[callee.name='Date'][arguments.length=0]",
          message: 'Read the time from the clock passed down (src/clock.ts), not new Date().',
        },
        {
          selector: "MemberExpression[object.name='Date'][property.name='now']",
          message: 'Read the time from the clock passed down (src/clock.ts), not Date.now().',
        },
        {
          selector: "MemberExpression[object.name='performance'][property.name='now']",
          message: 'Read durations from the clock passed down (clock.monotonicMs(), src/clock.ts), not performance.now().',
        },
        {
          selector: "MemberExpression[object.type='MetaProperty'][property.name='url']",
          message: 'Name files from PACKAGE_ROOT (src/package-root.ts): built, this module may run from a shared chunk in dist/chunks/.',
        },
      ],
    },
  },
  {
    files: ['src/migrations/**', 'src/db/database.ts', 'src/db/postgres/dialect.ts'],
    // Migrations and the schema checks run against the tables as they were, not today's Tables: Kysely<any> is their type.
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['src/**/*.test.ts', 'test/**'],
    // One knob sizes every property test (PROPERTY_RUNS, test/support/seed.ts): a count of cases goes through runs().
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "Property[key.name='numRuns'][value.type='Literal']",
          message: 'write numRuns: runs(n), from test/support/seed.ts, so that PROPERTY_RUNS sizes it',
        },
      ],
    },
  },
  {
    files: ['admin-ui/src/pages/**'],
    // A page is loaded on its own (its own chunk): what two pages share lives in components/, never in a page.
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['./*', '../pages/*'], message: 'a page imports no other page: move what is shared to admin-ui/src/components/' }] },
      ],
    },
  },
  {
    files: ['**/*.cjs'],
    // CommonJS configuration files (dependency-cruiser's).
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
  },
  {
    files: ['test/**'],
    // Tests read JSON answers as loose records; their shapes are held by the contract check (test/support/contract.ts).
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
)
