import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import {
  CODE_ALPHABET,
  CODE_BITS,
  generatedCode,
  isCodeBody,
  isPoolCode,
  meetsMinTier,
  planUpload,
  readCodes,
  strandedRewards,
  tierNamesOf,
} from './rewards.ts'
import { importEntry } from './imports.ts'

describe('generated codes', () => {
  test('at least 60 bits, an alphabet without look-alikes, the prefix first', () => {
    assert.ok(CODE_BITS >= 60, `${CODE_BITS} bits`)
    for (const lookalike of ['0', 'O', '1', 'I', '2', 'Z', '5', 'S']) assert.ok(!CODE_ALPHABET.includes(lookalike), lookalike)
    assert.equal(new Set(CODE_ALPHABET).size, CODE_ALPHABET.length)
    assert.equal(generatedCode('FIVE-', 'ABCDEFGHJKMNP'), 'FIVE-ABCDEFGHJKMNP')
    assert.equal(generatedCode(null, 'ABCDEFGHJKMNP'), 'ABCDEFGHJKMNP')
    assert.ok(isCodeBody('3467899ABCDEF'))
    assert.ok(!isCodeBody('0467899ABCDEF'))
    assert.ok(!isCodeBody('3467899ABCDE'))
  })
})

describe('pools', () => {
  test('an upload adds its codes in order, each once, leaving out what the shop holds', () => {
    assert.deepEqual(planUpload(['A', 'B', 'A', 'C', 'D'], new Set(['C'])), { add: ['A', 'B', 'D'], duplicates: 2, handedOut: 0 })
    assert.deepEqual(planUpload([], new Set()), { add: [], duplicates: 0, handedOut: 0 })
    // A code a claim handed out (generated, say) is left out and counted as such, each time it is sent.
    assert.deepEqual(planUpload(['X-1', 'A', 'X-1', 'B'], new Set(), new Set(['X-1'])), { add: ['A', 'B'], duplicates: 2, handedOut: 2 })
  })

  test('whatever the upload and what is held: added codes are distinct, in first-seen order, none held; added + duplicates = sent', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom('A', 'B', 'C', 'D', 'E')), fc.uniqueArray(fc.constantFrom('A', 'B', 'C')), (codes: string[], held: string[]) => {
        const plan = planUpload(codes, new Set(held))
        assert.equal(new Set(plan.add).size, plan.add.length)
        assert.ok(plan.add.every((c) => !held.includes(c)))
        assert.deepEqual(plan.add, [...new Set(codes.filter((c) => !held.includes(c)))])
        assert.equal(plan.add.length + plan.duplicates, codes.length)
      }),
    )
  })

  test('a file of codes: one a line, a header and empty lines left out; the first bad line named', () => {
    assert.deepEqual(readCodes('\uFEFFcode\r\nA1\n\n A2 \n'), { codes: ['A1', 'A2'] })
    assert.deepEqual(readCodes('A1\nhas space\n'), { line: 2, detail: 'must be 1 to 100 printable ASCII characters without spaces, commas or quotes' })
    assert.equal((readCodes('code\n\n') as { line: number }).line, 0)
    assert.ok(!isPoolCode('a,b') && !isPoolCode('a"b') && !isPoolCode("a'b") && !isPoolCode('') && !isPoolCode('é') && !isPoolCode('x'.repeat(101)))
    assert.ok(isPoolCode('SAVE-10_#1') && isPoolCode('x'.repeat(100)))
  })
})

describe('tiers', () => {
  test("a rule's tier names, in its order; none without tiers", () => {
    assert.deepEqual(
      tierNamesOf({
        tiers: [
          { name: 'silver', points: 0 },
          { name: 'gold', points: 1000 },
        ],
      }),
      ['silver', 'gold'],
    )
    for (const rule of [null, {}, { tiers: 'gold' }, 7]) assert.deepEqual(tierNamesOf(rule), [])
  })

  test('a min_tier lets in its tier and those above; no tier, or a tier the shop no longer has, is below every tier', () => {
    const tiers = ['bronze', 'silver', 'gold']
    assert.ok(meetsMinTier(tiers, null, null))
    assert.ok(meetsMinTier(tiers, 'silver', 'silver'))
    assert.ok(meetsMinTier(tiers, 'silver', 'gold'))
    assert.ok(!meetsMinTier(tiers, 'silver', 'bronze'))
    assert.ok(!meetsMinTier(tiers, 'silver', null))
    assert.ok(!meetsMinTier(tiers, 'platinum', 'gold'), 'a min_tier the shop no longer has lets nobody in')
    assert.ok(!meetsMinTier(tiers, 'bronze', 'retired'))
  })
})

describe('imports', () => {
  test("an import brings what the customer's imports hold to the line's points, on the first import's date", () => {
    assert.deepEqual(importEntry([], 120, 50), { available_us: 50, points: 120 })
    assert.equal(importEntry([], 0, 50), null)
    assert.equal(importEntry([{ available_us: 10, points: 120 }], 120, 50), null, 'the same file again')
    assert.deepEqual(importEntry([{ available_us: 10, points: 120 }], 100, 50), { available_us: 10, points: -20 })
    assert.deepEqual(
      importEntry(
        [
          { available_us: 30, points: 5 },
          { available_us: 10, points: 120 },
        ],
        200,
        50,
      ),
      { available_us: 10, points: 75 },
    )
  })

  test('whatever the files imported in turn, the entries sum to the last file, and importing it again adds nothing', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(1000), { minLength: 1, maxLength: 8 }), (files) => {
        const held: { available_us: number; points: number }[] = []
        files.forEach((points, i) => {
          const entry = importEntry(held, points, i + 1)
          if (entry) held.push(entry)
        })
        assert.equal(
          held.reduce((sum, e) => sum + e.points, 0),
          files.at(-1),
        )
        assert.equal(importEntry(held, files.at(-1)!, 99), null)
        assert.ok(held.every((e) => e.available_us === held[0]!.available_us))
      }),
    )
  })
})

describe('a rule change that would strand rewards', () => {
  const rewards = [
    { id: 1, name: 'Tote', min_tier: 'Silver' },
    { id: 2, name: 'Mug', min_tier: 'Silver' },
    { id: 3, name: 'Watch', min_tier: 'Gold' },
    { id: 4, name: 'Pen', min_tier: null },
    { id: 5, name: 'Relic', min_tier: 'Platinum' },
  ]
  test('one fault per tier taken away, naming its rewards; kept tiers, rewards without a tier and rewards stranded before are none of it', () => {
    assert.deepEqual(strandedRewards(['Silver', 'Gold'], ['Silver', 'Gold', 'Platinum'], rewards), [])
    assert.deepEqual(strandedRewards(['Silver', 'Gold'], ['silver'], rewards, '/rule/tiers'), [
      { pointer: '/rule/tiers', detail: 'must keep tier Silver: rewards 1 (Tote), 2 (Mug) need it (min_tier); change or clear their min_tier first' },
      { pointer: '/rule/tiers', detail: 'must keep tier Gold: reward 3 (Watch) needs it (min_tier); change or clear their min_tier first' },
    ])
    assert.deepEqual(strandedRewards([], [], rewards), [])
  })
})
