import fc from 'fast-check'

// Every property test runs a fixed number of cases (its numRuns) from a seed printed at the
// start, so that any run, failing or not, can be replayed: FC_SEED=<seed> node --import tsx --test <file>.
// Imported by each file that uses fast-check, for runs() and for this effect.

export const SEED =
  process.env.FC_SEED !== undefined && process.env.FC_SEED !== '' ? Number(process.env.FC_SEED) : (Date.now() ^ (Math.random() * 0x7fffffff)) | 0

if (!Number.isInteger(SEED)) throw new Error(`FC_SEED must be an integer, not ${process.env.FC_SEED}`)

/**
 * PROPERTY_RUNS, the one knob of every property's size: each runs this many times its own number
 * of cases (1 when unset: each property's own, as written beside it; 10 for a long hunt, 0.2 for
 * a quick look; at least one case each).
 */
export const PROPERTY_RUNS = process.env.PROPERTY_RUNS !== undefined && process.env.PROPERTY_RUNS !== '' ? Number(process.env.PROPERTY_RUNS) : 1
if (!(PROPERTY_RUNS > 0) || !Number.isFinite(PROPERTY_RUNS)) throw new Error(`PROPERTY_RUNS must be a number above 0, not ${process.env.PROPERTY_RUNS}`)

/** A property's number of cases: its own `cases`, scaled by PROPERTY_RUNS. Every numRuns is written as runs(n). */
export function runs(cases: number): number {
  return Math.max(1, Math.round(cases * PROPERTY_RUNS))
}

// No time limit: a property that stops early would pass on fewer cases than it says. A property
// that gives no numRuns runs fast-check's default 100, scaled the same.
fc.configureGlobal({ ...fc.readConfigureGlobal(), seed: SEED, numRuns: runs(100), interruptAfterTimeLimit: undefined })
console.log(`fast-check seed ${SEED} (replay: FC_SEED=${SEED})`)
