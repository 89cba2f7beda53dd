import type { Clock } from '../clock.ts'
import { Command, InvalidArgumentError, Option } from 'commander'
import type { Rule } from '../loyalty/rule.ts'
import {
  BONUS_POINTS_MAX,
  MULTIPLIER_MAX,
  MULTIPLIER_MIN,
  PENDING_DAYS_MAX,
  PENDING_DAYS_MIN,
  RATE_MAX,
  RATE_MIN,
  REFERRAL_CAP_MAX,
  REFERRAL_DAYS_MAX,
  REFERRAL_DAYS_MIN,
  TAG_MAX,
  TIER_NAME_MAX,
  TIER_POINTS_MAX,
  TIER_WINDOW_DAYS_MAX,
  TIER_WINDOW_DAYS_MIN,
  WARNING_DAYS_MAX,
  WARNING_LEADS_MAX,
} from '../loyalty/rule-limits.ts'
import { findShop } from '../repos/keys-repo.ts'
import { auditCommandLine, commandLineName } from './audit.ts'
import { withBackend } from './backend.ts'
import { shopName } from './keys.ts'
import { minimumOption } from '../loyalty/referral-minimum.ts'
import { parseActivitySpec, type Activity } from '../loyalty/activities.ts'

// The ranges are the rule schema's, so the messages say what it accepts.
const RATE = { minimum: RATE_MIN, maximum: RATE_MAX }
const DAYS = { minimum: PENDING_DAYS_MIN, maximum: PENDING_DAYS_MAX }
const RATE_RANGE = `from ${RATE.minimum} to ${RATE.maximum}, with at most 4 decimals`
const DAYS_RANGE = `from ${DAYS.minimum} to ${DAYS.maximum}`

function rate(text: string): number | undefined {
  if (!/^\d+(\.\d{1,4})?$/.test(text)) return undefined
  const value = Number(text)
  return value <= RATE.maximum ? value : undefined
}

function number(value: string): number {
  const n = rate(value)
  if (n === undefined) throw new InvalidArgumentError(`a number ${RATE_RANGE}, such as 1 or 1.5`)
  return n
}

function days(value: string): number {
  if (!/^\d{1,4}$/.test(value) || Number(value) > DAYS.maximum) {
    throw new InvalidArgumentError(`a whole number of days ${DAYS_RANGE}`)
  }
  return Number(value)
}

function expiryDays(value: string): number {
  if (!/^\d{1,5}$/.test(value) || Number(value) > 36500) throw new InvalidArgumentError('a whole number of days from 0 (never) to 36500')
  return Number(value)
}

function currencyRate(value: string, previous: Record<string, number> = {}): Record<string, number> {
  const m = /^([A-Z]{3})=(.*)$/.exec(value)
  const n = m ? rate(m[2]!) : undefined
  if (!m || n === undefined) throw new InvalidArgumentError(`CUR=RATE, a three-letter currency code and a rate ${RATE_RANGE}, such as EUR=1 or JPY=0`)
  return { ...previous, [m[1]!]: n }
}

function wholeNumber(what: string, min: number, max: number): (value: string) => number {
  return (value) => {
    if (!/^\d{1,13}$/.test(value) || Number(value) < min || Number(value) > max) throw new InvalidArgumentError(`${what} from ${min} to ${max}`)
    return Number(value)
  }
}

const bonus = wholeNumber('a whole number of points', 0, BONUS_POINTS_MAX)
const referralDays = wholeNumber('a whole number of days', REFERRAL_DAYS_MIN, REFERRAL_DAYS_MAX)
const referralCap = wholeNumber('a whole number of referrals', 0, REFERRAL_CAP_MAX)
const rewardId = wholeNumber('the id of a reward of the catalogue', 1, Number.MAX_SAFE_INTEGER)
/** An amount with two decimals, such as 50.00 (or 50). */
/** A referral minimum: an amount and its currency, or one per currency (src/loyalty/referral-minimum.ts). */
function minimum(value: string): string {
  const parsed = minimumOption(value)
  if ('error' in parsed) throw new InvalidArgumentError(parsed.error)
  return parsed.text
}
const windowDays = wholeNumber('a whole number of days', TIER_WINDOW_DAYS_MIN, TIER_WINDOW_DAYS_MAX)
const warningDays = wholeNumber('a whole number of days', 0, WARNING_DAYS_MAX)
/** Up to three lead times, `30,7,1` (any order, each once); `0` alone for none. */
function leadTimes(value: string): number[] {
  const what = `up to ${WARNING_LEADS_MAX} whole numbers of days from 1 to ${WARNING_DAYS_MAX}, separated by commas, such as 30,7,1 (or 0 for none)`
  if (value.trim() === '0') return []
  const parts = value.split(',').map((p) => p.trim())
  if (
    parts.length > WARNING_LEADS_MAX ||
    new Set(parts).size !== parts.length ||
    parts.some((p) => !/^\d{1,3}$/.test(p) || Number(p) < 1 || Number(p) > WARNING_DAYS_MAX)
  )
    throw new InvalidArgumentError(what)
  return parts.map(Number)
}
/** 1 to `max` characters, none of them a control character (the rule's schema says the same). */
const printable = (text: string, max: number) => text.length >= 1 && text.length <= max && [...text].every((c) => c.charCodeAt(0) > 0x1f && c !== '\u007f')

function tag(value: string, previous: string[] = []): string[] {
  if (!printable(value, TAG_MAX)) throw new InvalidArgumentError(`a tag of 1 to ${TAG_MAX} printable characters`)
  return [...previous, value]
}

type TierOption = { name: string; points: number; multiplier: number }

function tier(value: string, previous: TierOption[] = []): TierOption[] {
  const m = /^(.+?):(\d{1,13})(?::(\d{1,3}(?:\.\d{1,2})?))?$/.exec(value)
  const points = m ? Number(m[2]) : NaN
  const multiplier = m?.[3] === undefined ? 1 : Number(m[3])
  if (!m || !printable(m[1]!, TIER_NAME_MAX) || points > TIER_POINTS_MAX || multiplier < MULTIPLIER_MIN || multiplier > MULTIPLIER_MAX) {
    throw new InvalidArgumentError(
      `NAME:POINTS[:MULTIPLIER], a name of 1 to ${TIER_NAME_MAX} characters, a threshold from 0 to ${TIER_POINTS_MAX} and a multiplier from ` +
        `${MULTIPLIER_MIN} to ${MULTIPLIER_MAX} with at most 2 decimals (default 1), such as Gold:1000:1.5`,
    )
  }
  return [...previous, { name: m[1]!, points, multiplier }]
}

function tagTier(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const at = value.lastIndexOf('=')
  const [t, name] = [value.slice(0, at), value.slice(at + 1)]
  if (at < 0 || !printable(t, TAG_MAX) || !printable(name, TIER_NAME_MAX))
    throw new InvalidArgumentError('TAG=TIER, a customer tag and the name of a tier, such as vip=Gold')
  return { ...previous, [t]: name }
}

// Activities (docs/program/activities.md): NAME:POINTS[:COUNT/PERIOD], repeatable; the list given replaces the list.
function activity(value: string, previous: Activity[] = []): Activity[] {
  const parsed = parseActivitySpec(value)
  if ('problem' in parsed) throw new InvalidArgumentError(parsed.problem)
  return [...previous, parsed]
}

/** The options of `rules set` that change the rule (all but --shop). */
const CHANGES = [
  'pointsPerUnit',
  'includeShipping',
  'includeTax',
  'excludeGiftcard',
  'currencyRate',
  'clearCurrencyRates',
  'earnOn',
  'pendingDays',
  'expireAfterDays',
  'signupPoints',
  'newsletterPoints',
  'excludeTag',
  'clearExcludeTags',
  'tier',
  'clearTiers',
  'tierWindowDays',
  'tagTier',
  'clearTagTiers',
  'expiryWarningDays',
  'tierWarningDays',
  'referralPoints',
  'referralFriendPoints',
  'referralFriendReward',
  'referralMinSubtotal',
  'referralDays',
  'referralCapPerMonth',
  'birthdayPoints',
  'activity',
  'clearActivities',
]

async function shopOrFail(db: Parameters<typeof findShop>[0], name: string) {
  const shop = await findShop(db, name)
  if (!shop) throw new Error(`no shop named ${name}`)
  return shop
}

function print(name: string, version: number, effectiveAt: string, rule: Rule): void {
  console.log(JSON.stringify({ shop: name, version, effective_at: effectiveAt, rule }, null, 2))
}

export function rulesCommand(clock: Clock): Command {
  const rules = new Command('rules').description("show or change a shop's points rule")
  rules
    .command('show')
    .description("print the shop's points rule, its version and when it took effect, as JSON")
    .requiredOption('--shop <name>', 'the shop', shopName)
    .action((options: { shop: string }) =>
      withBackend(async ({ db }) => {
        const [{ parseStoredRule }, { ruleHistory }, { formatUs }] = await Promise.all([
          import('../loyalty/rule.ts'),
          import('../repos/rule-repo.ts'),
          import('../domain/time.ts'),
        ])
        const shop = await shopOrFail(db, options.shop)
        const [current] = await ruleHistory(db, Number(shop.id), 1)
        print(options.shop, current!.version, formatUs(current!.effective_us), parseStoredRule(current!.rule))
      }),
    )
  rules
    .command('set')
    .description('change the rule: a new version, in effect from now; it applies to orders that change afterwards (points rebuild applies it to all)')
    .requiredOption('--shop <name>', 'the shop', shopName)
    .option('--points-per-unit <n>', 'points per whole currency unit', number)
    .option('--include-shipping', 'shipping earns points')
    .option('--no-include-shipping', 'shipping earns no points')
    .option('--include-tax', 'tax earns points')
    .option('--no-include-tax', 'tax earns no points')
    .option('--exclude-giftcard', 'the gift card amount earns no points (default)')
    .option('--no-exclude-giftcard', 'the gift card amount earns points')
    .option('--currency-rate <CUR=RATE>', 'a per-currency rate, repeatable; once any is set, only listed currencies earn', currencyRate)
    .option('--clear-currency-rates', 'remove all per-currency rates')
    .addOption(new Option('--earn-on <state>', 'when an order earns').choices(['paid', 'fulfilled']))
    .option('--pending-days <n>', 'days from processed_at until points are available', days)
    .option('--expire-after-days <n>', 'days after they became available that unspent points expire; 0 (the default) means never', expiryDays)
    .option('--signup-points <n>', 'points for registering, once per customer created from now on; 0 gives none', bonus)
    .option('--newsletter-points <n>', 'points for subscribing to the newsletter, once per customer, in webhooks dated from now on; 0 gives none', bonus)
    .option('--exclude-tag <tag>', 'customers carrying this tag earn nothing (repeatable; adds to the list)', tag)
    .option('--clear-exclude-tags', 'remove every excluded tag')
    .option('--tier <NAME:POINTS[:MULTIPLIER]>', 'a VIP tier, thresholds ascending (repeatable; the tiers given replace the list)', tier)
    .option('--clear-tiers', 'remove every tier')
    .option('--tier-window-days <n>', 'the days of orders that count toward a tier (default 365)', windowDays)
    .option('--tag-tier <TAG=TIER>', 'customers carrying the tag are in at least that tier (repeatable; adds to the list)', tagTier)
    .option('--clear-tag-tiers', 'remove every tag tier')
    .option(
      '--expiry-warning-days <days>',
      'append points.expiring to the feed this many days before points expire: up to three, such as 30,7,1; 0 gives none',
      leadTimes,
    )
    .option(
      '--tier-warning-days <n>',
      'append tier.expiring to the feed this many days before the tier sweep would move a customer down; 0 gives none',
      warningDays,
    )
    .option('--referral-points <n>', "points to the referrer for a friend's first order that qualifies (claims from now on); 0 gives none", bonus)
    .option('--referral-friend-points <n>', 'points to the friend on that order; 0 gives none (or --referral-friend-reward)', bonus)
    .option('--referral-friend-reward <id>', 'a reward of the catalogue (generated codes) whose code the friend gets at the claim', rewardId)
    .option('--no-referral-friend-reward', 'the friend gets no reward code')
    .option(
      '--referral-min-subtotal <amount>',
      'the subtotal the friend\'s first order must reach, with its currency ("30.00 EUR", or "30.00 EUR, 35.00 USD"); another currency does not qualify; 0 for none',
      minimum,
    )
    .option('--referral-days <n>', "days after the claim within which the friend's first order must come (default 30)", referralDays)
    .option(
      '--referral-cap-per-month <n>',
      "referrals rewarded per referrer per calendar month, in the shop's time zone; 0 (the default) for no cap",
      referralCap,
    )
    .option('--birthday-points <n>', "points on a customer's birthday, once a year, on the day in the shop's time zone; 0 gives none", bonus)
    .option(
      '--activity <NAME:POINTS[:COUNT/PERIOD]>',
      "an action the shop reports, its points and at most COUNT per PERIOD (day, week, month, year or ever, in the shop's time zone); repeatable, the list given replaces the list",
      activity,
    )
    .option('--clear-activities', 'remove every action')
    .action((options: Record<string, unknown> & { shop: string }) =>
      withBackend(async ({ db }) => {
        const shop = await shopOrFail(db, options.shop)
        // Commander sets the defaults of --no-… options; only options given on the command line count.
        const given = CHANGES.filter((name) => rules.commands.find((c) => c.name() === 'set')!.getOptionValueSource(name) === 'cli')
        if (given.length === 0) throw new Error('nothing changed: give at least one option to change (rules set --help lists them)')
        const [{ normalizeRule, parseStoredRule }, { nextVersion }, { changeRule, ruleHistory }, { formatUs }] = await Promise.all([
          import('../loyalty/rule.ts'),
          import('../loyalty/rule-changes.ts'),
          import('../repos/rule-repo.ts'),
          import('../domain/time.ts'),
        ])
        const effectiveUs = clock.nowUs()
        let changes = {}
        // Read, changed and written again if another change came in between.
        const written = await changeRule(
          db,
          Number(shop.id),
          effectiveUs,
          (stored) => {
            const current = parseStoredRule(stored.rule)
            const next: Rule = normalizeRule({
              ...current,
              ...(options.pointsPerUnit !== undefined && { points_per_unit: options.pointsPerUnit }),
              ...(options.includeShipping !== undefined && { include_shipping: options.includeShipping }),
              ...(options.includeTax !== undefined && { include_tax: options.includeTax }),
              ...(options.excludeGiftcard !== undefined && { exclude_giftcard: options.excludeGiftcard }),
              currency_rates: {
                ...(options.clearCurrencyRates ? {} : current.currency_rates),
                ...((options.currencyRate as Record<string, number> | undefined) ?? {}),
              },
              ...(options.earnOn !== undefined && { earn_on: options.earnOn }),
              ...(options.pendingDays !== undefined && { pending_days: options.pendingDays }),
              ...(options.expireAfterDays !== undefined && { expire_after_days: options.expireAfterDays }),
              ...(options.signupPoints !== undefined && { signup_points: options.signupPoints }),
              ...(options.newsletterPoints !== undefined && { newsletter_points: options.newsletterPoints }),
              exclude_tags: [...new Set([...(options.clearExcludeTags ? [] : current.exclude_tags), ...((options.excludeTag as string[] | undefined) ?? [])])],
              tiers: (options.tier as TierOption[] | undefined) ?? (options.clearTiers ? [] : current.tiers),
              ...(options.tierWindowDays !== undefined && { tier_window_days: options.tierWindowDays }),
              tag_tiers: { ...(options.clearTagTiers ? {} : current.tag_tiers), ...((options.tagTier as Record<string, string> | undefined) ?? {}) },
              ...(options.expiryWarningDays !== undefined && { expiry_warning_days: options.expiryWarningDays }),
              ...(options.tierWarningDays !== undefined && { tier_warning_days: options.tierWarningDays }),
              ...(options.referralPoints !== undefined && { referral_points: options.referralPoints }),
              ...(options.referralFriendPoints !== undefined && { referral_friend_points: options.referralFriendPoints }),
              // --no-referral-friend-reward sets it false; a number, the reward.
              ...(options.referralFriendReward !== undefined && {
                referral_friend_reward: typeof options.referralFriendReward === 'number' ? options.referralFriendReward : null,
              }),
              ...(options.referralMinSubtotal !== undefined && { referral_min_subtotal: options.referralMinSubtotal }),
              ...(options.referralDays !== undefined && { referral_days: options.referralDays }),
              ...(options.referralCapPerMonth !== undefined && { referral_cap_per_month: options.referralCapPerMonth }),
              ...(options.birthdayPoints !== undefined && { birthday_points: options.birthdayPoints }),
              activities: (options.activity as Activity[] | undefined) ?? (options.clearActivities ? [] : current.activities),
            })
            const version = nextVersion(current, stored.expiry_schedule, next, effectiveUs, stored.program_schedule)
            changes = version?.changes ?? {}
            return version
          },
          commandLineName(),
        )
        if (written.changed) {
          await auditCommandLine(
            db,
            {
              action: 'rule.set',
              shopId: Number(shop.id),
              target: String(written.version),
              detail: { version: written.version, changes },
            },
            clock.nowUs(),
          )
        }
        // The rule as it now is; the same values again make no version.
        const [current] = await ruleHistory(db, Number(shop.id), 1)
        print(options.shop, current!.version, formatUs(current!.effective_us), parseStoredRule(current!.rule))
      }),
    )
  return rules
}
