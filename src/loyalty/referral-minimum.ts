import { fromMinor, toMinor } from '../domain/money.ts'

// The subtotal a friend's first order must reach to reward a referral (docs/program/referrals.md),
// as the rule's `referral_min_subtotal` writes it: an amount and its currency (`30.00 EUR`), or
// one per currency (`30.00 EUR, 35.00 USD`). Amounts in two currencies cannot be compared without
// a rate, which the rule does not hold: an order in a currency the minimum does not list does not
// qualify. `0.00` alone is no minimum, in any currency. A positive amount with no currency is
// what rules written before minimums named their currency hold: it is read as it was then (the
// order's own currency), and a rule written now must name one (`minimumFaults`).

/** One amount, `0.00` or more with two decimals, and then a currency code. */
const AMOUNT = '(?:0|[1-9][0-9]{0,11})\\.[0-9]{2}'
const CURRENCY = '[A-Z]{3}'
/** At most this many currencies listed. */
export const MINIMUM_CURRENCIES_MAX = 20

/** The rule schema's pattern: one amount alone, or amounts each with its currency, separated by `, `. */
export const MINIMUM_PATTERN = `^(?:${AMOUNT}|${AMOUNT} ${CURRENCY}(?:, ${AMOUNT} ${CURRENCY}){0,${MINIMUM_CURRENCIES_MAX - 1}})$`

/** A minimum: one amount whatever the currency, or one per currency listed. */
export type ReferralMinimum = { kind: 'any'; minor: number } | { kind: 'listed'; byCurrency: ReadonlyMap<string, number> }

const parsed = new Map<string, ReferralMinimum | null>()

/** The minimum a rule's text says; null when the text is not one (the schema refuses it). */
export function parseMinimum(text: string): ReferralMinimum | null {
  const known = parsed.get(text)
  if (known !== undefined) return known
  let minimum: ReferralMinimum | null = null
  if (new RegExp(MINIMUM_PATTERN).test(text)) {
    const parts = text.split(', ').map((part) => part.split(' ') as [string, string | undefined])
    if (parts.length === 1 && parts[0]![1] === undefined) minimum = { kind: 'any', minor: toMinor(parts[0]![0]) }
    else {
      const byCurrency = new Map(parts.map(([amount, currency]) => [currency!, toMinor(amount)]))
      minimum = byCurrency.size === parts.length ? { kind: 'listed', byCurrency } : null
    }
  }
  if (parsed.size < 1000) parsed.set(text, minimum)
  return minimum
}

/**
 * The minor units an order in `currency` must reach, or undefined when it cannot qualify: the
 * minimum lists currencies and not this one (an order with no currency included).
 */
export function minimumFor(minimum: ReferralMinimum, currency: string | null): number | undefined {
  if (minimum.kind === 'any') return minimum.minor
  return currency === null ? undefined : minimum.byCurrency.get(currency)
}

/** What is wrong with a minimum a rule is given now (not one read back): each with what to write instead. */
export function minimumFaults(text: unknown): string[] {
  if (typeof text !== 'string') return []
  const minimum = parseMinimum(text)
  if (minimum === null) {
    return new RegExp(MINIMUM_PATTERN).test(text) ? ['must list each currency once, such as 30.00 EUR, 35.00 USD'] : []
  }
  if (minimum.kind === 'any' && minimum.minor > 0) {
    return [`must name its currency, such as ${fromMinor(minimum.minor)} EUR: an order in another currency does not qualify (0.00 alone is no minimum)`]
  }
  return []
}

/**
 * A minimum as the command line takes it: `30`, `30.00 EUR`, `30 EUR, 35.5 USD`; its rule text, or
 * a message of what to write. A positive amount must name its currency.
 */
export function minimumOption(value: string): { text: string } | { error: string } {
  const parts = value
    .trim()
    .split(/\s*,\s*/)
    .map((part) => /^((?:0|[1-9]\d{0,11})(?:\.\d{1,2})?)(?:\s+([A-Za-z]{3}))?$/.exec(part))
  const usage = 'an amount and its currency, such as 30.00 EUR, or one per currency: "30.00 EUR, 35.00 USD" (0 alone for none)'
  if (parts.some((m) => m === null)) return { error: usage }
  const text = parts
    .map((m) => {
      const [whole, cents = ''] = m![1]!.split('.')
      return `${whole}.${cents.padEnd(2, '0')}${m![2] === undefined ? '' : ` ${m![2].toUpperCase()}`}`
    })
    .join(', ')
  const fault = minimumFaults(text)[0] ?? (parseMinimum(text) === null ? usage : undefined)
  return fault === undefined ? { text } : { error: fault }
}
