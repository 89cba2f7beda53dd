import type { Session } from '../db/session.ts'
import { isUnavailable } from '../db/unavailable.ts'

/**
 * Runs `work` under a savepoint of the open transaction: when it fails, the transaction goes back
 * to where it was before `work` and the failure is rethrown. A database that cannot be reached is
 * not rolled back to anything: its failure is rethrown as it is.
 */
export async function underSavepoint<T>(s: Session, work: () => Promise<T>): Promise<T> {
  await s.exec('SAVEPOINT part')
  try {
    const result = await work()
    await s.exec('RELEASE SAVEPOINT part')
    return result
  } catch (err) {
    if (!isUnavailable(err)) await s.exec('ROLLBACK TO SAVEPOINT part')
    throw err
  }
}
