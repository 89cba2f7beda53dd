import { Type } from 'typebox'

export const Health = Type.Object({ status: Type.Literal('ok') }, { additionalProperties: false, description: 'the process is alive' })

export const Readiness = Type.Object(
  {
    status: Type.Literal('ready'),
    database: Type.Union([Type.Literal('sqlite'), Type.Literal('postgres')], { description: 'the database the service writes to' }),
    nats: Type.Optional(
      Type.Object(
        {
          connected: Type.Boolean({ description: 'whether this process is connected to NATS now' }),
          relay_lag_seconds: Type.Number({ minimum: 0, description: 'age of the oldest change feed entry not yet published (0 when none)' }),
        },
        {
          additionalProperties: false,
          description: 'with NATS_URL set: the change feed relay. NATS being down does not make the service unready: entries wait in the database',
        },
      ),
    ),
    redis: Type.Optional(
      Type.Union([Type.Literal('up'), Type.Literal('down')], {
        description:
          'with REDIS_URL: whether Redis, where the rate limit is counted, answers; while it is down the limit lets webhooks through (the service stays ready)',
      }),
    ),
  },
  { additionalProperties: false, description: 'a webhook can be committed now' },
)
