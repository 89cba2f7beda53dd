// The rules of rewards: what a reward is, how its generated codes look, which tier a claim needs,
// and what an upload adds to a pool. Pure: the random part of a generated code comes in from the
// caller (src/keys/reward-codes.ts), so that the decider that uses these stays a function.

export const REWARD_KINDS = ['fixed_amount', 'percentage', 'free_shipping', 'custom'] as const
export type RewardKind = (typeof REWARD_KINDS)[number]

export const CODE_SOURCES = ['generated', 'pool'] as const
export type CodeSource = (typeof CODE_SOURCES)[number]

/** Letters and digits that no font confuses with another (no 0/O, 1/I, 2/Z, 5/S, and upper case only): a code read aloud or typed from a screen is typed right. */
export const CODE_ALPHABET = '346789ABCDEFGHJKLMNPQRTUVWXY'
/** 13 characters of 28: 62.5 bits, past the 60 a guess must beat. */
export const CODE_LENGTH = 13
/** The bits of chance in a generated code's random part. */
export const CODE_BITS = CODE_LENGTH * Math.log2(CODE_ALPHABET.length)

/** A prefix the reward may set: letters, digits, dashes and underscores, so that a code is one word at a checkout. */
export const CODE_PREFIX_PATTERN = '^[A-Za-z0-9_-]{1,20}$'
/** A pool's code: 1 to 100 printable ASCII characters without spaces, commas or quotes (one CSV cell, one word at a checkout). */
export const POOL_CODE_PATTERN = '^[!#-&(-+\\--~]{1,100}$'
const POOL_CODE = new RegExp(POOL_CODE_PATTERN)

/** Most points a reward may cost (a redemption's limit, src/loyalty/points-limits.ts, is far above any catalogue). */
export const REWARD_POINTS_MAX = 1_000_000_000
/** Most codes one upload takes. */
export const CODES_PER_UPLOAD_MAX = 50_000

/** A generated code: the reward's prefix and the random part. */
export const generatedCode = (prefix: string | null, random: string) => `${prefix ?? ''}${random}`

/** True for a random part made of CODE_LENGTH characters of CODE_ALPHABET. */
export const isCodeBody = (random: string) => random.length === CODE_LENGTH && [...random].every((c) => CODE_ALPHABET.includes(c))

export const isPoolCode = (code: string) => POOL_CODE.test(code)

/**
 * What an upload adds to a pool: its codes in their order, each once, leaving out every code the
 * shop has ever held: those in any of its pools (`held`) and those a claim handed out (`handedOut`,
 * generated ones too: a platform's export of discount codes holds them). The rest are duplicates
 * (of the shop's or of the upload's own); `handedOut` counts the lines left out because a claim
 * holds their code.
 */
export function planUpload(
  codes: readonly string[],
  held: ReadonlySet<string>,
  handedOut: ReadonlySet<string> = new Set(),
): { add: string[]; duplicates: number; handedOut: number } {
  const seen = new Set<string>()
  const add: string[] = []
  let claimed = 0
  for (const code of codes) {
    if (handedOut.has(code)) claimed++
    if (seen.has(code) || held.has(code) || handedOut.has(code)) continue
    seen.add(code)
    add.push(code)
  }
  return { add, duplicates: codes.length - add.length, handedOut: claimed }
}

/** The tier names of a shop's rule (its `tiers`, ascending), or none while the rule has no tiers. */
export function tierNamesOf(rule: unknown): string[] {
  const tiers = typeof rule === 'object' && rule !== null ? (rule as { tiers?: unknown }).tiers : undefined
  if (!Array.isArray(tiers)) return []
  return tiers.map((t) => (t as { name?: unknown })?.name).filter((name): name is string => typeof name === 'string')
}

/** A reward as a rule change sees it: what it is called and the tier it needs. */
export interface RewardNeed {
  id: number
  name: string
  min_tier: string | null
}

/**
 * What a rule change from the tiers `before` to the tiers `after` would strand: the rewards that
 * need (min_tier) a tier it renames or removes, which no customer could claim any more. One fault
 * per tier, at `pointer`, naming the rewards; a reward stranded already (its tier gone before) is
 * none of this change's doing. Names are compared exactly, as a claim compares them.
 */
export function strandedRewards(
  before: readonly string[],
  after: readonly string[],
  rewards: readonly RewardNeed[],
  pointer = '/tiers',
): { pointer: string; detail: string }[] {
  const needing = new Map<string, RewardNeed[]>()
  for (const r of rewards) {
    if (r.min_tier === null || !before.includes(r.min_tier) || after.includes(r.min_tier)) continue
    needing.set(r.min_tier, [...(needing.get(r.min_tier) ?? []), r])
  }
  return [...needing].map(([tier, list]) => ({
    pointer,
    detail:
      `must keep tier ${tier}: ${list.length === 1 ? 'reward' : 'rewards'} ${list.map((r) => `${r.id} (${r.name})`).join(', ')} ` +
      `${list.length === 1 ? 'needs' : 'need'} it (min_tier); change or clear their min_tier first`,
  }))
}

/**
 * Whether a customer of tier `tier` (null: below the lowest) may claim a reward that needs
 * `minTier` (null: anyone), with the shop's tiers `tiers` in ascending order. A tier the shop no
 * longer has ranks below every tier, so a renamed tier never lets anyone through.
 */
export function meetsMinTier(tiers: readonly string[], minTier: string | null, tier: string | null): boolean {
  if (minTier === null) return true
  const needed = tiers.indexOf(minTier)
  if (needed < 0 || tier === null) return false
  return tiers.indexOf(tier) >= needed
}

/**
 * The codes of a text, one a line (empty lines, and a first line `code`, left out), or the first
 * line that holds no code (0: the text as a whole is refused: no code, or too many).
 */
export function readCodes(text: string): { codes: string[] } | { line: number; detail: string } {
  const codes: string[] = []
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/)
  for (const [i, raw] of lines.entries()) {
    const code = raw.trim()
    if (code === '' || (i === 0 && code.toLowerCase() === 'code')) continue
    if (!isPoolCode(code)) return { line: i + 1, detail: 'must be 1 to 100 printable ASCII characters without spaces, commas or quotes' }
    codes.push(code)
  }
  if (codes.length === 0) return { line: 0, detail: 'must hold at least one code' }
  if (codes.length > CODES_PER_UPLOAD_MAX) return { line: 0, detail: `must hold at most ${CODES_PER_UPLOAD_MAX} codes (${codes.length} sent)` }
  return { codes }
}
