import { customAlphabet } from 'nanoid'
import { CODE_ALPHABET, CODE_LENGTH } from '../loyalty/rewards.ts'

// The random part of a generated reward code: CODE_LENGTH characters of an alphabet without
// look-alikes (src/loyalty/rewards.ts), each drawn uniformly from the operating system's CSPRNG
// (nanoid's customAlphabet: crypto.getRandomValues, with rejection of the bytes that would bias
// the draw). 13 of 28 characters are 62.5 bits: guessing a customer's code is hopeless.

const draw = customAlphabet(CODE_ALPHABET, CODE_LENGTH)

/** A new random code body; the reward puts its prefix before it. */
export const randomCodeBody = (): string => draw()
