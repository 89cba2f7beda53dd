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
          publishing: Type.Boolean({
            description: "whether the relay can publish now: connected, its stream ready (made, or given this prefix's subjects) and its last round not failed",
          }),
          error: Type.Union([Type.String(), Type.Null()], { description: 'why the relay cannot publish (the last failure), null while it can' }),
          subject_prefix: Type.Union([Type.String(), Type.Null()], {
            description: 'the subjects it publishes under: NATS_SUBJECT_PREFIX, or shop-intake.<deployment id> (null until read from the database)',
          }),
        },
        {
          additionalProperties: false,
          description:
            'with NATS_URL set: the change feed relay. A relay that cannot publish does not make the service unready (webhooks are still taken, and entries wait in the database): it shows here and in the log every half minute',
        },
      ),
    ),
    redis: Type.Optional(
      Type.Union([Type.Literal('up'), Type.Literal('down')], {
        description:
          'with REDIS_URL: whether Redis, where the rate limit is counted, answers; while it is down the limit lets webhooks through (the service stays ready)',
      }),
    ),
    reward_pools_low_count: Type.Optional(
      Type.Integer({
        minimum: 1,
        description:
          'present when active pools of rewards, of every shop, have fewer codes left than REWARD_POOL_LOW (sampled every STORAGE_SAMPLE_SECONDS): how many. A warning: the service stays ready',
      }),
    ),
    reward_pools_low: Type.Optional(
      Type.Array(
        Type.Object(
          {
            shop: Type.String({ description: "the shop's name" }),
            reward_id: Type.Integer(),
            name: Type.String({ description: "the reward's name" }),
            codes_left: Type.Integer({ minimum: 0 }),
          },
          { additionalProperties: false },
        ),
        {
          description:
            "to an admin key, every shop's pools that reward_pools_low_count counts, by name; to a shop's key, its own (absent when none): upload more before claims answer pool-empty. Absent without a key",
        },
      ),
    ),
  },
  { additionalProperties: false, description: 'a webhook can be committed now' },
)
