import { Type } from 'typebox'
import { REPORT_DEFAULT_DAYS, REPORT_MAX_BUCKETS } from '../loyalty/report-limits.ts'

// The points liability report (GET /v3/admin/shops/{shop}/points-report): its query and its answers.

const Day = (description: string) => Type.String({ pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$', description })

export const PointsReportQuery = Type.Object({
  from: Type.Optional(Day(`the first day (the shop's, in its time zone), from 1970-01-01 on; by default ${REPORT_DEFAULT_DAYS - 1} days before \`to\``)),
  to: Type.Optional(Day("the last day (the shop's), included, not before `from`; by default the shop's today")),
  bucket: Type.Optional(
    Type.Union([Type.Literal('day'), Type.Literal('week'), Type.Literal('month')], {
      description: `day (the default), week (ISO weeks, Monday to Sunday) or month (calendar months); the first and last buckets are cut at \`from\` and \`to\`; at most ${REPORT_MAX_BUCKETS} buckets`,
    }),
  ),
})

const Points = (description: string) => Type.Integer({ description })

const OutstandingProperties = {
  outstanding: Points("the customers' points at the end of the day (available + pending)"),
  available: Points('of which the customers could spend then'),
  pending: Points('of which were written by then and become available later'),
}

export const PointsReportBucket = Type.Object(
  {
    start: Type.String({ description: "the first day of the bucket (YYYY-MM-DD, the shop's)" }),
    end: Type.String({ description: 'its last day, included' }),
    earned: Points("earned by orders (reason earned), and guests' points claimed by a customer (claimed)"),
    reversed: Points('taken back, negative: refunds, cancellations, and the order points of erased customers (reversed_refund, reversed_cancel, forfeited)'),
    redeemed: Points('spent, negative (redeemed)'),
    given_back: Points('given back by cancelled redemptions (redemption_cancelled)'),
    expired: Points('expired, negative (expired)'),
    adjusted: Points(
      "changed by an order's new amount or rule, by an operator, moved between customers, or brought over from another platform (adjusted, adjusted_manually, transferred, import)",
    ),
    ...OutstandingProperties,
  },
  { additionalProperties: false },
)

export const PointsReportView = Type.Object(
  {
    shop: Type.String({ description: "the shop's name" }),
    time_zone: Type.String({ description: "the shop's IANA time zone, in which its days are counted" }),
    from: Type.String({ description: 'the first day (YYYY-MM-DD)' }),
    to: Type.String({ description: 'the last day, included' }),
    bucket: Type.Union([Type.Literal('day'), Type.Literal('week'), Type.Literal('month')], { description: 'as asked' }),
    opening: Type.Object(OutstandingProperties, { additionalProperties: false, description: 'at the end of the day before `from`' }),
    buckets: Type.Array(PointsReportBucket, {
      description:
        "oldest first. Each flow is signed as it changes the customers' points, so that opening.outstanding plus a bucket's flows and those of the buckets before it is its outstanding",
    }),
  },
  { additionalProperties: false },
)
