import { Type } from 'typebox'

// Birthdays (docs/program/birthdays.md): a month and a day, no year, set by the shop's server,
// the customer on the storefront, or an operator in the console.

export const BirthdayBody = Type.Object(
  {
    month: Type.Integer({ minimum: 1, maximum: 12, description: 'the month, 1 (January) to 12' }),
    day: Type.Integer({
      minimum: 1,
      maximum: 31,
      description: 'the day of the month: a day the month has (February 29 is paid on February 28 in other years)',
    }),
  },
  { additionalProperties: false, description: 'a birthday: `month` and `day`, no year' },
)

export const Birthday = Type.Object(
  {
    month: Type.Integer({ minimum: 1, maximum: 12 }),
    day: Type.Integer({ minimum: 1, maximum: 31 }),
  },
  { additionalProperties: false, description: "the customer's birthday: a month and a day, no year" },
)

export const BirthdayView = Type.Object(
  {
    customer_id: Type.Integer(),
    birthday: Birthday,
    set_by: Type.Union([Type.Literal('shop'), Type.Literal('customer'), Type.Literal('operator')], {
      description: "who set it last: the shop's server, the customer on the storefront, or an operator",
    }),
    points_paid: Type.Integer({
      minimum: 0,
      description:
        "the points its day paid at once: set on the birthday itself by the shop's server or an operator (0 otherwise, or when paid this year already)",
    }),
  },
  { additionalProperties: false },
)

/** The birthday as the customer's own reads show it: null when none is set. */
export const BirthdayField = Type.Union([Birthday, Type.Null()], { description: "the customer's birthday; null when none is set" })
