import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { CUSTOMER_CREATED, CUSTOMER_DELETED, forEachDatabase, ORDER_CREATED, startTestApp, type TestApp } from '../support/harness.ts'

// Every validation rule (docs/integrate/validation.md) over HTTP, on both databases.

const MAX_ID = 9007199254740991 // 2^53 - 1
const MONEY_FIELDS = ['total', 'subtotal', 'amount_shipping', 'amount_giftcard', 'amount_tax'] as const
const ORDER_FLAGS = ['is_fulfilled', 'is_refunded', 'is_paid'] as const

let nextId = 1000
const freshId = () => nextId++

const label = (value: unknown) => (typeof value === 'string' ? JSON.stringify(value) : String(JSON.stringify(value) ?? value))

interface FieldError {
  pointer: string
  detail: string
}

/** A 422 problem: RFC 9457 members, an event id, and one {pointer, detail} per violation. Returns the errors. */
function assertInvalid(res: LightMyRequestResponse): FieldError[] {
  assert.equal(res.statusCode, 422, `expected 422, got ${res.statusCode}: ${res.body}`)
  assert.match(String(res.headers['content-type']), /^application\/problem\+json\b/)
  const body = res.json()
  assert.equal(typeof body.type, 'string')
  assert.ok(body.type.length > 0)
  assert.equal(typeof body.title, 'string')
  assert.ok(body.title.length > 0)
  assert.equal(body.status, 422)
  assert.equal(typeof body.detail, 'string')
  assert.ok(body.detail.length > 0)
  assert.equal(typeof body.event_id, 'string')
  assert.ok(Array.isArray(body.errors), 'errors must be an array')
  assert.ok(body.errors.length > 0, 'errors must not be empty')
  for (const e of body.errors) {
    assert.equal(typeof e.pointer, 'string')
    assert.equal(typeof e.detail, 'string')
    assert.ok(e.detail.length > 0, `empty detail for ${e.pointer}`)
  }
  return body.errors as FieldError[]
}

/** A 422 whose errors name exactly `pointers` (order ignored). */
function assertPointers(res: LightMyRequestResponse, pointers: string[]): FieldError[] {
  const errors = assertInvalid(res)
  assert.deepEqual(errors.map((e) => e.pointer).sort(), [...pointers].sort(), res.body)
  return errors
}

function assertApplied(res: LightMyRequestResponse): string {
  assert.equal(res.statusCode, 200, `expected 200, got ${res.statusCode}: ${res.body}`)
  const body = res.json()
  assert.equal(body.status, 'applied')
  assert.equal(typeof body.event_id, 'string')
  return body.event_id as string
}

forEachDatabase((kind) => {
  let t: TestApp
  before(async () => {
    t = await startTestApp(kind)
  })
  after(() => t.close())

  const storedEvent = (id: string) => t.app.services.backend.db.selectFrom('events').selectAll().where('id', '=', id).executeTakeFirst()

  describe('id', () => {
    // eslint-disable-next-line no-loss-of-precision -- ids past 2^53, as a client may send them
    const badIds: unknown[] = ['12', 0, -1, 1.5, null, true, [1], { id: 1 }, 9007199254740992, 9007199254740993, 1e20, '']
    const hooks = [
      ['customer', CUSTOMER_CREATED],
      ['delete', CUSTOMER_DELETED],
      ['order', ORDER_CREATED],
    ] as const

    for (const [name, path] of hooks) {
      test(`${name}: id is required`, async () => {
        const errors = assertPointers(await t.post(path, { first_name: 'No', email: 'no-id@example.com' }), ['/id'])
        assert.match(errors[0]!.detail, /required/)
      })
      for (const id of badIds) {
        test(`${name}: id ${label(id)} is rejected`, async () => {
          assertPointers(await t.post(path, { id }), ['/id'])
        })
      }
    }

    test('embedded customer: id is required and typed', async () => {
      assertPointers(await t.post(ORDER_CREATED, { id: freshId(), customer: { email: 'emb@example.com' } }), ['/customer/id'])
      assertPointers(await t.post(ORDER_CREATED, { id: freshId(), customer: { id: '12' } }), ['/customer/id'])
      assertPointers(await t.post(ORDER_CREATED, { id: freshId(), customer: { id: 9007199254740992 } }), ['/customer/id'])
      assertPointers(await t.post(ORDER_CREATED, { id: freshId(), customer: { id: 0 } }), ['/customer/id'])
    })

    test('the detail of a too large id names the limit', async () => {
      const [error] = assertPointers(await t.post(CUSTOMER_CREATED, '{"id":9007199254740992}'), ['/id'])
      assert.match(error!.detail, /9007199254740991/)
    })

    test('ids far above 2^53 written as literals are rejected, not rounded', async () => {
      for (const literal of ['9007199254740993', '12345678901234567890', '1e16', '18446744073709551616']) {
        const res = await t.post(CUSTOMER_CREATED, `{"id":${literal},"first_name":"Big"}`)
        assertPointers(res, ['/id'])
      }
    })

    test('a fractional id just under 2^53 is rejected, not rounded to an integer', async () => {
      // 9007199254740990.9 is not an integer; parsed as a double it becomes 9007199254740991.
      const res = await t.post(CUSTOMER_CREATED, '{"id":9007199254740990.9,"first_name":"Rounded"}')
      assertPointers(res, ['/id'])
      assert.equal((await t.get(`/v3/customers/${MAX_ID}`)).statusCode, 404)
    })

    test('id 2^53-1 is accepted and read back exactly', async () => {
      assertApplied(await t.post(CUSTOMER_CREATED, { id: MAX_ID, first_name: 'Max' }))
      const res = await t.get(`/v3/customers/${MAX_ID}`)
      assert.equal(res.statusCode, 200)
      assert.match(res.body, /"id":9007199254740991[,}]/)
      assert.equal(res.json().first_name, 'Max')
      assertApplied(await t.post(ORDER_CREATED, { id: MAX_ID, ref: 'max' }))
      const order = await t.get(`/v3/orders/${MAX_ID}`)
      assert.equal(order.statusCode, 200)
      assert.match(order.body, /"id":9007199254740991[,}]/)
      // Delete of the max id works too.
      assertApplied(await t.post(CUSTOMER_DELETED, { id: MAX_ID, updated_at: '2254-01-01T00:00:00Z' }))
      assert.equal((await t.get(`/v3/customers/${MAX_ID}`)).statusCode, 404)
    })

    test('id 1 is accepted', async () => {
      assertApplied(await t.post(CUSTOMER_CREATED, { id: 1 }))
      assert.equal((await t.get('/v3/customers/1')).json().id, 1)
    })
  })

  describe('customer fields', () => {
    test('a fully valid customer is applied and read back exactly', async () => {
      const id = freshId()
      const customer = {
        id,
        first_name: 'Ana',
        last_name: 'López',
        email: 'Ana.Lopez+vip@example.co.uk',
        is_newsletter: false,
        tags: ['vip', 'early'],
        created_at: '2024-05-01T10:00:00.123456+05:30',
        updated_at: '2024-05-02T08:00:00Z',
      }
      assertApplied(await t.post(CUSTOMER_CREATED, customer))
      const res = await t.get(`/v3/customers/${id}`)
      assert.equal(res.statusCode, 200)
      // Timestamps read back as the same instant, in UTC with six fraction digits.
      assert.deepEqual(res.json(), {
        ...customer,
        created_at: '2024-05-01T04:30:00.123456Z',
        updated_at: '2024-05-02T08:00:00.000000Z',
        tier: null,
        tier_progress: null,
      })
    })

    const badStrings: unknown[] = [12, true, false, null, ['a'], { a: 1 }]
    for (const field of ['first_name', 'last_name'] as const) {
      for (const value of badStrings) {
        test(`${field} ${label(value)} is rejected (not a string)`, async () => {
          assertPointers(await t.post(CUSTOMER_CREATED, { id: freshId(), [field]: value }), [`/${field}`])
        })
      }
    }

    const badEmails: unknown[] = ['not-an-email', 'a@', '@example.com', 'a b@example.com', 'a@b@example.com', '', 12, true, null, ['a@example.com']]
    for (const email of badEmails) {
      test(`email ${label(email)} is rejected`, async () => {
        assertPointers(await t.post(CUSTOMER_CREATED, { id: freshId(), email }), ['/email'])
      })
    }

    for (const email of ['a@example.com', 'first.last+tag@sub.example.org', "o'brien@example.ie"]) {
      test(`email ${label(email)} is accepted`, async () => {
        const id = freshId()
        assertApplied(await t.post(CUSTOMER_CREATED, { id, email }))
        assert.equal((await t.get(`/v3/customers/${id}`)).json().email, email)
      })
    }

    const badFlags: unknown[] = ['yes', 'true', 'false', 1, 0, null, [true], {}]
    for (const value of badFlags) {
      test(`is_newsletter ${label(value)} is rejected (no coercion)`, async () => {
        assertPointers(await t.post(CUSTOMER_CREATED, { id: freshId(), is_newsletter: value }), ['/is_newsletter'])
      })
    }

    for (const value of [true, false]) {
      test(`is_newsletter ${value} is accepted and read back`, async () => {
        const id = freshId()
        assertApplied(await t.post(CUSTOMER_CREATED, { id, is_newsletter: value }))
        assert.equal((await t.get(`/v3/customers/${id}`)).json().is_newsletter, value)
      })
    }

    const badTags: [unknown, string][] = [
      ['vip', '/tags'],
      [12, '/tags'],
      [null, '/tags'],
      [{ 0: 'vip' }, '/tags'],
      [[1], '/tags/0'],
      [['ok', 2], '/tags/1'],
      [['ok', null], '/tags/1'],
      [[['nested']], '/tags/0'],
      [[{ name: 'vip' }], '/tags/0'],
      [['ok', 'fine', true], '/tags/2'],
    ]
    for (const [tags, pointer] of badTags) {
      test(`tags ${label(tags)} is rejected at ${pointer}`, async () => {
        assertPointers(await t.post(CUSTOMER_CREATED, { id: freshId(), tags }), [pointer])
      })
    }

    test('a tag or a name that is not a string is told it must be a string, not about NUL characters', async () => {
      const res = await t.post(CUSTOMER_CREATED, { id: freshId(), first_name: 3, tags: ['ok', 2, null, 'a\u0000b'] })
      const errors = assertPointers(res, ['/first_name', '/tags/1', '/tags/2', '/tags/3'])
      const detail = (pointer: string) => errors.find((e) => e.pointer === pointer)!.detail
      for (const pointer of ['/first_name', '/tags/1', '/tags/2']) assert.equal(detail(pointer), 'must be a string', pointer)
      // A string with a NUL is told about the NUL.
      assert.match(detail('/tags/3'), /NUL/)
    })

    test('tags: every bad item is listed', async () => {
      assertPointers(await t.post(CUSTOMER_CREATED, { id: freshId(), tags: [1, 'ok', false, 'fine', null] }), ['/tags/0', '/tags/2', '/tags/4'])
    })

    // A tag is kept once whatever its case, in the spelling and place it was first sent.
    for (const [tags, kept] of [
      [[], []],
      [['vip'], ['vip']],
      [
        ['a', 'b', 'a', ''],
        ['a', 'b', ''],
      ],
      [
        ['VIP', 'vip', 'new', 'Vip'],
        ['VIP', 'new'],
      ],
    ]) {
      test(`tags ${label(tags)} is accepted and read back as an array`, async () => {
        const id = freshId()
        assertApplied(await t.post(CUSTOMER_CREATED, { id, tags }))
        assert.deepEqual((await t.get(`/v3/customers/${id}`)).json().tags, kept)
      })
    }

    test('unknown fields are accepted and kept in the stored raw body', async () => {
      const id = freshId()
      const raw = `{"id":${id},"first_name":"Kai","loyalty_tier":"gold","addresses":[{"city":"Oslo"}],"note":null,"score":1.5}`
      const eventId = assertApplied(await t.post(CUSTOMER_CREATED, raw))
      assert.equal((await t.get(`/v3/customers/${id}`)).json().first_name, 'Kai')
      const event = await storedEvent(eventId)
      assert.ok(event, 'the event is stored')
      assert.equal(Buffer.from(event.body).toString('utf8'), raw)
    })

    test('a customer with several bad fields lists every violation', async () => {
      const res = await t.post(CUSTOMER_CREATED, {
        id: '12',
        first_name: 5,
        last_name: false,
        email: 'nope',
        is_newsletter: 'yes',
        tags: ['ok', 3],
        created_at: '2024-05-01T10:00:00',
        updated_at: '2024-02-31T10:00:00Z',
        extra: 'ignored',
      })
      assertPointers(res, ['/id', '/first_name', '/last_name', '/email', '/is_newsletter', '/tags/1', '/created_at', '/updated_at'])
    })
  })

  describe('timestamps', () => {
    const badTimestamps: unknown[] = [
      '2024-05-01T10:00:00', // no offset
      '2024-05-01T10:00:00.123', // no offset, fraction
      '2024-05-01', // date only
      '10:00:00Z', // time only
      '2024-02-31T10:00:00Z', // impossible date
      '2023-02-29T10:00:00Z', // not a leap year
      '2024-04-31T10:00:00Z',
      '2024-13-01T10:00:00Z',
      '2024-00-10T10:00:00Z',
      '2024-05-00T10:00:00Z',
      '2024-05-01T24:00:01Z',
      '2024-05-01T10:60:00Z',
      '2024-05-01T10:00:00+25:00',
      'yesterday',
      '',
      'Wed, 01 May 2024 10:00:00 GMT',
      1714557600,
      true,
      null,
    ]
    for (const field of ['created_at', 'updated_at'] as const) {
      for (const value of badTimestamps) {
        test(`customer ${field} ${label(value)} is rejected`, async () => {
          assertPointers(await t.post(CUSTOMER_CREATED, { id: freshId(), [field]: value }), [`/${field}`])
        })
      }
    }

    test('order timestamps without offset or impossible are rejected', async () => {
      assertPointers(await t.post(ORDER_CREATED, { id: freshId(), processed_at: '2024-05-01T10:00:00' }), ['/processed_at'])
      assertPointers(await t.post(ORDER_CREATED, { id: freshId(), processed_at: '2024-02-31T10:00:00Z' }), ['/processed_at'])
      assertPointers(await t.post(ORDER_CREATED, { id: freshId(), updated_at: '2024-05-01T10:00:00' }), ['/updated_at'])
      assertPointers(await t.post(ORDER_CREATED, { id: freshId(), customer: { id: freshId(), updated_at: '2024-05-01T10:00:00' } }), ['/customer/updated_at'])
      assertPointers(await t.post(ORDER_CREATED, { id: freshId(), customer: { id: freshId(), created_at: '2024-02-30T00:00:00Z' } }), ['/customer/created_at'])
      assertPointers(await t.post(CUSTOMER_DELETED, { id: freshId(), updated_at: '2024-05-01T10:00:00' }), ['/updated_at'])
    })

    // Each accepted timestamp, and the same instant as the API writes it back: UTC, six fraction digits.
    const goodTimestamps: [string, string][] = [
      ['2024-05-01T10:00:00Z', '2024-05-01T10:00:00.000000Z'],
      ['2024-05-01T10:00:00+02:00', '2024-05-01T08:00:00.000000Z'],
      ['2024-05-01T10:00:00-05:30', '2024-05-01T15:30:00.000000Z'],
      ['2024-05-01T10:00:00.5Z', '2024-05-01T10:00:00.500000Z'],
      ['2024-05-01T10:00:00.123456789+00:00', '2024-05-01T10:00:00.123456Z'],
      ['2024-02-29T23:59:59Z', '2024-02-29T23:59:59.000000Z'],
      ['2000-02-29T00:00:00+14:00', '2000-02-28T10:00:00.000000Z'],
    ]
    for (const [value, utc] of goodTimestamps) {
      test(`timestamp ${label(value)} is accepted and read back as ${utc}`, async () => {
        const id = freshId()
        assertApplied(await t.post(CUSTOMER_CREATED, { id, created_at: value, updated_at: value }))
        const customer = (await t.get(`/v3/customers/${id}`)).json()
        assert.equal(customer.created_at, utc)
        assert.equal(customer.updated_at, utc)
        const orderId = freshId()
        assertApplied(await t.post(ORDER_CREATED, { id: orderId, processed_at: value, cancelled_at: value }))
        const order = (await t.get(`/v3/orders/${orderId}`)).json()
        assert.equal(order.processed_at, utc)
        assert.equal(order.cancelled_at, utc)
      })
    }
  })

  describe('order fields', () => {
    const badMoney: unknown[] = [
      '12.5',
      '12',
      '12.345',
      '.50',
      '12.',
      '',
      ' 12.00',
      '12.00 ',
      '+12.00',
      '1,00',
      '1,000.00',
      '€12.00',
      '12.00 EUR',
      '1e3',
      '0x10',
      'NaN',
      '--1.00',
      '12345678901234.00', // 14 integer digits
      12.5,
      12,
      0,
      null,
      true,
      ['12.00'],
      { amount: '12.00' },
    ]
    for (const field of MONEY_FIELDS) {
      for (const value of badMoney) {
        test(`${field} ${label(value)} is rejected`, async () => {
          assertPointers(await t.post(ORDER_CREATED, { id: freshId(), [field]: value }), [`/${field}`])
        })
      }
    }

    const goodMoney = ['19.90', '0.00', '0.05', '-3.00', '-0.01', '1234567890123.99', '-1234567890123.99', '100.10']
    for (const value of goodMoney) {
      test(`money ${label(value)} is accepted in every amount field and read back as the same string`, async () => {
        const id = freshId()
        const amounts = Object.fromEntries(MONEY_FIELDS.map((f) => [f, value]))
        assertApplied(await t.post(ORDER_CREATED, { id, ...amounts }))
        const res = await t.get(`/v3/orders/${id}`)
        assert.equal(res.statusCode, 200)
        const order = res.json()
        for (const f of MONEY_FIELDS) assert.equal(order[f], value, f)
      })
    }

    test('distinct amounts come back in their own fields', async () => {
      const id = freshId()
      const amounts = { total: '107.45', subtotal: '99.95', amount_shipping: '4.90', amount_giftcard: '-10.00', amount_tax: '12.60' }
      assertApplied(await t.post(ORDER_CREATED, { id, ...amounts }))
      const order = (await t.get(`/v3/orders/${id}`)).json()
      for (const [f, v] of Object.entries(amounts)) assert.equal(order[f], v, f)
    })

    // The pattern ^-?\d+\.\d{2}$ admits these; if they are accepted they must come back exactly as sent.
    for (const value of ['-0.00', '007.50', '00.00']) {
      test(`money ${label(value)} is either rejected or read back exactly as sent`, async () => {
        const id = freshId()
        const res = await t.post(ORDER_CREATED, { id, total: value })
        if (res.statusCode === 422) {
          assertPointers(res, ['/total'])
          return
        }
        assertApplied(res)
        assert.equal((await t.get(`/v3/orders/${id}`)).json().total, value)
      })
    }

    const badCurrencies: unknown[] = ['eur', 'Eur', 'EURO', 'EU', 'E1R', '€', '', ' EUR', 'EUR ', 978, null, ['EUR']]
    for (const currency of badCurrencies) {
      test(`currency ${label(currency)} is rejected`, async () => {
        assertPointers(await t.post(ORDER_CREATED, { id: freshId(), currency }), ['/currency'])
      })
    }

    for (const currency of ['EUR', 'JPY', 'XXX']) {
      test(`currency ${label(currency)} is accepted and read back`, async () => {
        const id = freshId()
        assertApplied(await t.post(ORDER_CREATED, { id, currency }))
        assert.equal((await t.get(`/v3/orders/${id}`)).json().currency, currency)
      })
    }

    for (const flag of ORDER_FLAGS) {
      for (const value of ['yes', 'true', 1, 0, null, [true]]) {
        test(`${flag} ${label(value)} is rejected (no coercion)`, async () => {
          assertPointers(await t.post(ORDER_CREATED, { id: freshId(), [flag]: value }), [`/${flag}`])
        })
      }
    }

    test('order flags true are accepted and read back', async () => {
      const id = freshId()
      assertApplied(await t.post(ORDER_CREATED, { id, is_fulfilled: true, is_refunded: true, is_paid: true }))
      const order = (await t.get(`/v3/orders/${id}`)).json()
      assert.equal(order.is_fulfilled, true)
      assert.equal(order.is_refunded, true)
      assert.equal(order.is_paid, true)
    })

    test('order ref and email are typed', async () => {
      assertPointers(await t.post(ORDER_CREATED, { id: freshId(), ref: 1001 }), ['/ref'])
      assertPointers(await t.post(ORDER_CREATED, { id: freshId(), ref: null }), ['/ref'])
      assertPointers(await t.post(ORDER_CREATED, { id: freshId(), email: 'buyer-at-example.com' }), ['/email'])
      const id = freshId()
      assertApplied(await t.post(ORDER_CREATED, { id, ref: '#1001', email: 'buyer@example.com' }))
      const order = (await t.get(`/v3/orders/${id}`)).json()
      assert.equal(order.ref, '#1001')
      assert.equal(order.email, 'buyer@example.com')
    })

    test('cancelled_at null is accepted and read back as null', async () => {
      const id = freshId()
      assertApplied(await t.post(ORDER_CREATED, { id, cancelled_at: null }))
      assert.equal((await t.get(`/v3/orders/${id}`)).json().cancelled_at, null)
    })

    test('cancelled_at as a timestamp is accepted and read back as the same instant in UTC', async () => {
      const id = freshId()
      assertApplied(await t.post(ORDER_CREATED, { id, cancelled_at: '2024-05-01T10:00:00+02:00' }))
      assert.equal((await t.get(`/v3/orders/${id}`)).json().cancelled_at, '2024-05-01T08:00:00.000000Z')
    })

    for (const value of ['', 'null', false, 0, '2024-05-01T10:00:00', '2024-02-31T10:00:00Z', {}, []]) {
      test(`cancelled_at ${label(value)} is rejected`, async () => {
        assertPointers(await t.post(ORDER_CREATED, { id: freshId(), cancelled_at: value }), ['/cancelled_at'])
      })
    }

    test('unknown fields in an order and its customer are accepted and kept in the raw body', async () => {
      const id = freshId()
      const customerId = freshId()
      const raw =
        `{"id":${id},"total":"5.00","line_items":[{"sku":"A-1","qty":2,"price":"2.50"}],"gateway":"stripe",` +
        `"customer":{"id":${customerId},"first_name":"Lin","default_address":{"zip":"0150"}}}`
      const eventId = assertApplied(await t.post(ORDER_CREATED, raw))
      assert.equal((await t.get(`/v3/orders/${id}`)).json().total, '5.00')
      assert.equal((await t.get(`/v3/customers/${customerId}`)).json().first_name, 'Lin')
      const event = await storedEvent(eventId)
      assert.ok(event)
      assert.equal(Buffer.from(event.body).toString('utf8'), raw)
    })
  })

  describe('embedded customer', () => {
    test('a valid embedded customer is applied with the order', async () => {
      const id = freshId()
      const customer = {
        id: freshId(),
        first_name: 'Emb',
        last_name: 'Edded',
        email: 'emb@example.com',
        is_newsletter: true,
        tags: ['b2b'],
        created_at: '2024-04-01T00:00:00-03:00',
        updated_at: '2024-04-02T00:00:00Z',
      }
      assertApplied(await t.post(ORDER_CREATED, { id, total: '1.00', customer }))
      assert.equal((await t.get(`/v3/orders/${id}`)).json().customer_id, customer.id)
      assert.deepEqual((await t.get(`/v3/customers/${customer.id}`)).json(), {
        ...customer,
        created_at: '2024-04-01T03:00:00.000000Z',
        updated_at: '2024-04-02T00:00:00.000000Z',
        tier: null,
        tier_progress: null,
      })
    })

    const cases: [string, unknown, string][] = [
      ['email', 'bad', '/customer/email'],
      ['first_name', 5, '/customer/first_name'],
      ['last_name', ['x'], '/customer/last_name'],
      ['is_newsletter', 'yes', '/customer/is_newsletter'],
      ['tags', 'vip', '/customer/tags'],
      ['tags', ['ok', 7], '/customer/tags/1'],
      ['created_at', '2024-05-01T10:00:00', '/customer/created_at'],
      ['updated_at', '2024-02-31T10:00:00Z', '/customer/updated_at'],
      ['id', 1.5, '/customer/id'],
      ['id', -3, '/customer/id'],
    ]
    for (const [field, value, pointer] of cases) {
      test(`embedded customer ${field} ${label(value)} is rejected at ${pointer}`, async () => {
        const customer = { id: freshId(), [field]: value }
        assertPointers(await t.post(ORDER_CREATED, { id: freshId(), customer }), [pointer])
      })
    }

    for (const value of ['x', 5, [], [{ id: 1 }], true, null]) {
      test(`customer ${label(value)} (not an object) is rejected at /customer`, async () => {
        assertPointers(await t.post(ORDER_CREATED, { id: freshId(), customer: value }), ['/customer'])
      })
    }

    test('a rejected order applies neither the order nor its customer', async () => {
      const id = freshId()
      const customerId = freshId()
      assertPointers(await t.post(ORDER_CREATED, { id, total: '12.5', customer: { id: customerId, first_name: 'Ghost' } }), ['/total'])
      assert.equal((await t.get(`/v3/orders/${id}`)).statusCode, 404)
      assert.equal((await t.get(`/v3/customers/${customerId}`)).statusCode, 404)
    })
  })

  describe('deletes', () => {
    test('a delete is validated by the customer rules and lists every violation', async () => {
      const res = await t.post(CUSTOMER_DELETED, { id: '7', email: 'x', updated_at: '2024-05-01T10:00:00', is_newsletter: 'no', tags: [1] })
      assertPointers(res, ['/id', '/email', '/updated_at', '/is_newsletter', '/tags/0'])
    })

    test('a rejected delete does not delete', async () => {
      const id = freshId()
      assertApplied(await t.post(CUSTOMER_CREATED, { id, first_name: 'Stays', updated_at: '2024-01-01T00:00:00Z' }))
      assertPointers(await t.post(CUSTOMER_DELETED, { id, updated_at: '2024-02-31T00:00:00Z' }), ['/updated_at'])
      assert.equal((await t.get(`/v3/customers/${id}`)).json().first_name, 'Stays')
    })

    test('a valid delete with unknown fields is applied', async () => {
      const id = freshId()
      assertApplied(await t.post(CUSTOMER_CREATED, { id, updated_at: '2024-01-01T00:00:00Z' }))
      assertApplied(await t.post(CUSTOMER_DELETED, { id, email: 'gone@example.com', updated_at: '2024-01-02T00:00:00Z', reason: 'gdpr' }))
      assert.equal((await t.get(`/v3/customers/${id}`)).statusCode, 404)
    })
  })

  describe('422 problems', () => {
    test('an order with many bad fields lists every violation, embedded ones by their full pointer', async () => {
      const res = await t.post(ORDER_CREATED, {
        id: 9007199254740992,
        currency: 'eur',
        email: 'x',
        ref: 5,
        total: '12.5',
        subtotal: '12',
        amount_shipping: 12.5,
        amount_giftcard: '1.234',
        amount_tax: null,
        cancelled_at: '2024-05-01',
        processed_at: '2024-05-01T10:00:00',
        is_fulfilled: 'yes',
        is_refunded: 1,
        is_paid: 'true',
        updated_at: 'soon',
        customer: { email: 'bad', is_newsletter: 'no', tags: 'vip', created_at: '2024-02-30T00:00:00Z', first_name: 3 },
        unknown: { deep: true },
      })
      const errors = assertPointers(res, [
        '/id',
        '/currency',
        '/email',
        '/ref',
        '/total',
        '/subtotal',
        '/amount_shipping',
        '/amount_giftcard',
        '/amount_tax',
        '/cancelled_at',
        '/processed_at',
        '/is_fulfilled',
        '/is_refunded',
        '/is_paid',
        '/updated_at',
        '/customer/id',
        '/customer/email',
        '/customer/is_newsletter',
        '/customer/tags',
        '/customer/created_at',
        '/customer/first_name',
      ])
      const detail = (pointer: string) => errors.find((e) => e.pointer === pointer)!.detail
      assert.match(detail('/customer/id'), /required/)
      assert.match(detail('/customer/email'), /e-mail/)
      assert.match(detail('/total'), /two/)
      assert.match(detail('/currency'), /three/)
      assert.match(detail('/processed_at'), /offset/)
    })

    test('a 422 stores the body byte-exact as a rejected event with its reasons', async () => {
      const raw = `{"id":${freshId()},"email":"not-an-email","total":"1.5","x":"kept \u00e9"}`
      const res = await t.post(ORDER_CREATED, raw)
      const errors = assertPointers(res, ['/email', '/total'])
      const body = res.json()
      assert.match(body.detail, new RegExp(body.event_id))
      const event = await storedEvent(body.event_id)
      assert.ok(event, 'the rejected body is stored as an event')
      assert.equal(event.outcome, 'rejected')
      assert.equal(event.topic, 'order/hook_created')
      assert.ok(Buffer.from(event.body).equals(Buffer.from(raw, 'utf8')))
      assert.ok(event.errors !== null)
      assert.deepEqual(JSON.parse(event.errors), errors)
    })

    test('the same invalid body sent twice is rejected twice, never "duplicate"', async () => {
      const body = { id: freshId(), email: 'twice' }
      assertPointers(await t.post(CUSTOMER_CREATED, body), ['/email'])
      assertPointers(await t.post(CUSTOMER_CREATED, body), ['/email'])
    })
  })
})
