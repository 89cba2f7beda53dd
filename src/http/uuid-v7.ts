import { randomFillSync } from 'node:crypto'
import { v7 } from 'uuid'

// The ids the service gives what it stores (events, redemptions, adjustments): UUIDv7, laid out
// by the uuid library. Its plain v7() draws 16 fresh random bytes through crypto.getRandomValues
// on every call, which was most of an id's cost; here the random bytes come from a pool filled
// with one randomFillSync per POOL_IDS ids. The counter is uuid's own rule (RFC 9562 §6.2,
// method 1), kept here because v7() skips it once given its random bytes: a new millisecond
// starts a random 31-bit counter, within one the counter goes up by one, and its overflow moves
// the timestamp on. So ids stay time-ordered and strictly increasing within the process, even if
// the wall clock steps back.

const POOL_IDS = 4096
/** The bytes v7() reads: 6..9 start a millisecond's counter, 10..15 are the id's random tail. */
const ID_BYTES = 10

export interface UuidV7Generator {
  (): string
}

/** A generator with its own counter; `now` is the clock in epoch milliseconds (the app's clock's stamps; tests pass their own). */
export function createUuidV7(now: () => number): UuidV7Generator {
  const pool = new Uint8Array(POOL_IDS * ID_BYTES)
  let at = pool.length
  // v7() reads its random bytes at fixed indexes of a 16-byte array: the pool's are copied in.
  const random = new Uint8Array(16)
  let msecs = -Infinity
  let seq = 0
  return () => {
    if (at === pool.length) {
      randomFillSync(pool)
      at = 0
    }
    for (let i = 6; i < 16; i++) random[i] = pool[at++]!
    const ms = now()
    if (ms > msecs) {
      msecs = ms
      seq = ((random[6]! & 0x7f) << 24) | (random[7]! << 16) | (random[8]! << 8) | random[9]!
    } else {
      seq = (seq + 1) | 0
      if (seq === 0) msecs++
    }
    return v7({ random, msecs, seq })
  }
}
