import { Type, type TArray, type TBoolean, type TInteger, type TObject, type TProperties, type TSchema } from 'typebox'
import { fromMinor } from '../domain/money.ts'
import { formatInstant } from '../domain/time.ts'
import { fieldsOf, isFlagSchema, isInstantSchema, isListSchema, isMoneySchema, type TMoney } from './field-kinds.ts'

// A record as the read API shows it, from its body's schema (./webhooks.ts): the view's schema
// (./resources.ts) and the function that fills it (src/routes/resources.ts). The spec's field
// shapes, null where the shop never sent a value; amounts as decimal strings, instants in one form.

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])
const Str = Nullable(Type.String())
const Amount = Nullable(Type.String({ description: 'a decimal amount with two fraction digits' }))
const List = Nullable(Type.Array(Type.String()))

type ViewOf<S, Flag> = S extends TInteger
  ? TInteger
  : S extends TMoney
    ? typeof Amount
    : S extends TBoolean
      ? Flag
      : S extends TArray
        ? typeof List
        : typeof Str
export type ViewFields<P extends TProperties, O extends keyof P, Flag> = { [K in Exclude<keyof P, O>]: ViewOf<P[K], Flag> }

/** The view's schema of each field of `body` but `omit`: its flags as `flag` (an order's are never null). */
export function viewFields<P extends TProperties, O extends keyof P & string, Flag extends TSchema>(
  body: TObject<P>,
  omit: O[],
  flag: Flag,
): ViewFields<P, O, Flag> {
  const viewOf = (schema: TSchema) =>
    (schema as { type?: unknown }).type === 'integer'
      ? Type.Integer()
      : isMoneySchema(schema)
        ? Amount
        : isFlagSchema(schema)
          ? flag
          : isListSchema(schema)
            ? List
            : Str
  return Object.fromEntries(fieldsOf(body, ...omit).map((name) => [name, viewOf(body.properties[name]!)])) as ViewFields<P, O, Flag>
}

const asIs = (value: unknown) => value
const amount = (minor: number | null) => (minor === null ? null : fromMinor(minor))

/**
 * The function that shows a record's fields (those of `body` but `omit`) as `viewFields`
 * describes them; `View` is the type of that schema. Worked out once, not per record.
 */
export function viewMapper<View>(body: TObject, omit: string[]): (record: object) => View {
  const fields = fieldsOf(body, ...omit).map((name) => {
    const schema = body.properties[name]!
    return { name, show: (isMoneySchema(schema) ? amount : isInstantSchema(schema) ? formatInstant : asIs) as (value: unknown) => unknown }
  })
  return (record) => {
    const view: Record<string, unknown> = {}
    for (const { name, show } of fields) view[name] = show((record as Record<string, unknown>)[name])
    return view as View
  }
}
