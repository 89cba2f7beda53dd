import { Type } from 'typebox'

export const Health = Type.Object({ status: Type.Literal('ok') }, { additionalProperties: false, description: 'the process is alive' })

export const Readiness = Type.Object(
  {
    status: Type.Literal('ready'),
    database: Type.Union([Type.Literal('sqlite'), Type.Literal('postgres')], { description: 'the database the service writes to' }),
  },
  { additionalProperties: false, description: 'a webhook can be committed now' },
)
