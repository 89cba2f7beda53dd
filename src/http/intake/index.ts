// The routes' intake kit: everything a route checks or refuses before its own work, in one place.
// Ids and the `{shop}` segment (values.ts, shop.ts), idempotency keys (idempotency.ts), a command's
// body (body.ts), problems by type with their status and title from PROBLEMS (../problem.ts), and
// the one way to hand an item to the writer (submit.ts).

export { badRequest, notFound, pointsLimitProblem, problem, ProblemError, sendProblem, unavailable, type ProblemInit, type ProblemType } from '../problem.ts'
export { commandBodyProblem } from './body.ts'
export { idempotencyKey, type HeaderBag } from './idempotency.ts'
export { shopByName } from './shop.ts'
export { NotStored, submit, type Writing } from './submit.ts'
export { isEventId, isObject, parseId, uuidOf } from './values.ts'
export { readBalanceFile } from './balance-file.ts'
