import assert from 'node:assert/strict'
import { test } from 'node:test'
import { FEED_TYPES } from './subscriptions.ts'
import { KLAVIYO_METRICS, NOT_FOR_KLAVIYO, klaviyoCustomerOf, klaviyoMetricOf } from './klaviyo-metrics.ts'
import { klaviyoEventBody, klaviyoKeyHint, klaviyoKeyProblem, klaviyoSkipReason, referralLink, retryAfterMs, type KlaviyoProfile } from './klaviyo-event.ts'

const profile: KlaviyoProfile = { email: 'ada@example.com', points: 120, pendingPoints: 30, tier: null, referralCode: 'abc', referralUrl: null }

test('every type of the feed has a Klaviyo metric, or a reason it is never sent', () => {
  for (const type of FEED_TYPES) {
    assert.ok(klaviyoMetricOf(type) !== undefined || Object.hasOwn(NOT_FOR_KLAVIYO, type), `${type}: add its line to KLAVIYO_METRICS`)
    assert.ok(!(klaviyoMetricOf(type) !== undefined && Object.hasOwn(NOT_FOR_KLAVIYO, type)), `${type} is both sent and never sent`)
  }
})

test('the types announced for later have their metric already; names are readable, distinct and under 128 characters', () => {
  for (const type of ['points.expiring', 'reward.available', 'tier.expiring', 'birthday.rewarded', 'activity.awarded']) assert.ok(klaviyoMetricOf(type), type)
  const names = Object.values(KLAVIYO_METRICS).map((m) => m.name)
  assert.equal(new Set(names).size, names.length)
  for (const name of names) assert.match(name, /^Loyalty [A-Z][a-z]+( [A-Z][a-z]+)+$/)
  assert.equal(klaviyoMetricOf('points.expiring')!.name, 'Loyalty Points Expiring')
  assert.equal(klaviyoMetricOf('toString'), undefined, "an object's own keys only")
})

test("the customer of an entry: customer_id, a referral's referrer, none for a guest", () => {
  assert.equal(klaviyoCustomerOf('points.changed', { customer_id: 9, guest: false }), 9)
  assert.equal(klaviyoCustomerOf('points.changed', { customer_id: null, guest: true }), null)
  assert.equal(klaviyoCustomerOf('referral.rewarded', { referrer_id: 4, friend_customer_id: 5 }), 4)
  assert.equal(klaviyoCustomerOf('reward.available', { customer_id: 3 }), 3, 'a type to come names its customer_id')
})

test('skipped: a guest, a customer not stored, deleted or with no e-mail; sent otherwise', () => {
  const entry = { type: 'points.changed', data: { customer_id: 9 } }
  assert.match(klaviyoSkipReason({ type: 'order.updated', data: { customer_id: null } }, undefined)!, /names no customer/)
  assert.match(klaviyoSkipReason(entry, undefined)!, /no customer 9 is stored/)
  assert.match(klaviyoSkipReason(entry, { deleted: true, email: null })!, /customer 9 is deleted \(erased\)/)
  assert.match(klaviyoSkipReason(entry, { deleted: true, email: 'x@example.com' })!, /deleted/, 'deleted wins over an e-mail')
  assert.match(klaviyoSkipReason(entry, { deleted: false, email: null })!, /no e-mail/)
  assert.equal(klaviyoSkipReason(entry, { deleted: false, email: 'ada@example.com' }), null)
})

test('the event: JSON:API, the metric by type, the entry as properties, its time and id, the profile by e-mail with its loyalty figures', () => {
  const entry = {
    id: '3.42',
    position: 42,
    shop: 'acme',
    type: 'points.expiring',
    created_at: '2025-06-01T10:00:00.000000Z',
    data: { customer_id: 9, points: 50 },
  }
  assert.deepEqual(klaviyoEventBody(entry, { ...profile, referralUrl: 'https://acme.example/r?ref=abc' }), {
    data: {
      type: 'event',
      attributes: {
        properties: { customer_id: 9, points: 50, shop: 'acme' },
        time: '2025-06-01T10:00:00.000000Z',
        unique_id: '3.42',
        metric: { data: { type: 'metric', attributes: { name: 'Loyalty Points Expiring' } } },
        profile: {
          data: {
            type: 'profile',
            attributes: {
              email: 'ada@example.com',
              properties: {
                loyalty_points: 120,
                loyalty_points_pending: 30,
                loyalty_tier: '',
                loyalty_referral_code: 'abc',
                loyalty_referral_url: 'https://acme.example/r?ref=abc',
              },
            },
          },
        },
      },
    },
  })
  const noLink = klaviyoEventBody(entry, profile).data.attributes.profile.data.attributes.properties
  assert.ok(!('loyalty_referral_url' in noLink), 'no page, no link')
  assert.throws(() => klaviyoEventBody({ ...entry, type: 'customer.deleted' }, profile), /no Klaviyo metric/)
})

test("referral links keep the page's query; keys are checked and hinted without being quoted; Retry-After in seconds or as a date", () => {
  assert.equal(referralLink('https://acme.example/refer?utm=mail', 'abc'), 'https://acme.example/refer?utm=mail&ref=abc')
  assert.equal(referralLink('https://acme.example/refer?ref=old', 'abc'), 'https://acme.example/refer?ref=abc')
  const key = 'pk_0123456789abcdef0123456789abcdef01'
  assert.equal(klaviyoKeyProblem(key), null)
  assert.equal(klaviyoKeyHint(key), 'pk_…ef01')
  for (const bad of ['AbC123', 'sk_0123456789', 'pk_short', 'pk_0123456789 abcdef', `${key}\n`]) {
    const why = klaviyoKeyProblem(bad)
    assert.ok(why, JSON.stringify(bad))
    assert.ok(!why.includes(bad.trim()), 'never quotes the key')
  }
  assert.equal(retryAfterMs('3', 0), 3000)
  assert.equal(retryAfterMs(' 0 ', 0), 0)
  assert.equal(retryAfterMs('Wed, 21 Oct 2015 07:28:05 GMT', Date.parse('Wed, 21 Oct 2015 07:28:00 GMT')), 5000)
  assert.equal(retryAfterMs('Wed, 21 Oct 2015 07:28:05 GMT', Date.parse('Wed, 21 Oct 2015 07:29:00 GMT')), 0)
  for (const bad of [undefined, '', 'soon', '-1', '1.5', '12345678901']) assert.equal(retryAfterMs(bad, 0), undefined, String(bad))
})
