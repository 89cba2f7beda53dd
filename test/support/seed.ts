import fc from 'fast-check'

// Every property test runs a fixed number of cases (its numRuns) from a seed printed at the
// start, so that any run, failing or not, can be replayed: FC_SEED=<seed> node --import tsx --test <file>.
// Imported for its effect by each file that uses fast-check.

export const SEED =
  process.env.FC_SEED !== undefined && process.env.FC_SEED !== '' ? Number(process.env.FC_SEED) : (Date.now() ^ (Math.random() * 0x7fffffff)) | 0

if (!Number.isInteger(SEED)) throw new Error(`FC_SEED must be an integer, not ${process.env.FC_SEED}`)
// No time limit: a property that stops early would pass on fewer cases than it says.
fc.configureGlobal({ ...fc.readConfigureGlobal(), seed: SEED, interruptAfterTimeLimit: undefined })
console.log(`fast-check seed ${SEED} (replay: FC_SEED=${SEED})`)
