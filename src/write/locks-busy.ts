/** Further keys a batch reached were locked by another transaction: it runs again with them locked first (src/write/unit-of-work.ts). */
export class LocksBusy extends Error {
  readonly code = '40001'
  constructor(readonly keys: readonly string[]) {
    super('orders reached by a claim, an erasure or a referral are being written by another batch')
  }
}
