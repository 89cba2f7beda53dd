// Which change feed entries a Klaviyo destination sends, as which Klaviyo metric, and whose
// profile each is about: one line a type (docs/integrate/klaviyo.md lists them for the shop's
// marketer). A type not here is never sent to Klaviyo, whatever the subscription's filter says.
// Types the feed does not have yet have their line already, so that they are sent as soon as
// the feed has them. Pure: no I/O.

export interface KlaviyoMetric {
  /** The metric's name in Klaviyo, which flows are built on (less than 128 characters). */
  name: string
  /** The field of the entry's `data` that names the customer whose profile it is; `customer_id` unless said. */
  customer?: string
}

export const KLAVIYO_METRICS: Readonly<Record<string, KlaviyoMetric>> = {
  'customer.updated': { name: 'Loyalty Customer Updated' },
  'order.updated': { name: 'Loyalty Order Updated' },
  'points.changed': { name: 'Loyalty Points Changed' },
  'points.expiring': { name: 'Loyalty Points Expiring' },
  'tier.changed': { name: 'Loyalty Tier Changed' },
  'tier.expiring': { name: 'Loyalty Tier Expiring' },
  'reward.claimed': { name: 'Loyalty Reward Claimed' },
  'reward.cancelled': { name: 'Loyalty Reward Cancelled' },
  'reward.available': { name: 'Loyalty Reward Available' },
  'referral.claimed': { name: 'Loyalty Referral Claimed', customer: 'referrer_id' },
  'referral.qualified': { name: 'Loyalty Referral Qualified', customer: 'referrer_id' },
  'referral.rewarded': { name: 'Loyalty Referral Rewarded', customer: 'referrer_id' },
  'referral.voided': { name: 'Loyalty Referral Voided', customer: 'referrer_id' },
  'referral.refused': { name: 'Loyalty Referral Refused', customer: 'referrer_id' },
  'referral.reinstated': { name: 'Loyalty Referral Reinstated', customer: 'referrer_id' },
  'birthday.rewarded': { name: 'Loyalty Birthday Rewarded' },
  'activity.awarded': { name: 'Loyalty Activity Awarded' },
  'activity.voided': { name: 'Loyalty Activity Voided' },
}

/**
 * Feed types a Klaviyo destination never sends, and why: a subscription that names one exactly is
 * refused (422), and a family that takes one (`customer.*`) passes its entries by.
 */
export const NOT_FOR_KLAVIYO: Readonly<Record<string, string>> = {
  'customer.deleted': "the customer's e-mail is erased by it, so no profile can be named",
}

/** The metric of a feed type, or undefined when Klaviyo is not sent that type. */
export const klaviyoMetricOf = (type: string): KlaviyoMetric | undefined => (Object.hasOwn(KLAVIYO_METRICS, type) ? KLAVIYO_METRICS[type] : undefined)

/**
 * The customer an entry is about (its metric's `customer` field of `data`), or null when it names
 * none: a guest's points or order (`customer_id` null), which no profile is sent for.
 */
export function klaviyoCustomerOf(type: string, data: Readonly<Record<string, unknown>>): number | null {
  const field = klaviyoMetricOf(type)?.customer ?? 'customer_id'
  const id = data[field]
  return typeof id === 'number' && Number.isSafeInteger(id) ? id : null
}
