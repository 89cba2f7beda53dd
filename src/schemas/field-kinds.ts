import type { TObject, TProperties, TSchema, TString } from 'typebox'
import { MONEY_PATTERN } from '../domain/money.ts'

// What the rest of the program reads off a body's schema (./webhooks.ts), so that the shape of a
// customer or an order is written once: its field names, and which fields are money, instants,
// flags or lists. The records (src/domain/merge.ts), the read API's views (./record-view.ts) and
// the columns (src/db/tables.ts, rows.ts) follow from them.

/** The type of the `Money` schema keeps its pattern, so that a type can tell an amount from text. */
export type TMoney = TString & { readonly pattern: typeof MONEY_PATTERN }

type Keywords = { readonly [keyword: string]: unknown }

/** An amount: a decimal string on the wire, integer minor units in the program and the database. */
export const isMoneySchema = (schema: TSchema): boolean => (schema as Keywords).pattern === MONEY_PATTERN

/** An instant, or an instant or null: the `x-instant` keyword of `Instant` (./common.ts). */
export const isInstantSchema = (schema: TSchema): boolean =>
  (schema as Keywords)['x-instant'] === true || ((schema as Keywords).anyOf as TSchema[] | undefined)?.some(isInstantSchema) === true

export const isFlagSchema = (schema: TSchema): boolean => (schema as Keywords).type === 'boolean'

export const isListSchema = (schema: TSchema): boolean => (schema as Keywords).type === 'array'

/** A body's field names, but `omit`, in the schema's order. */
export function fieldsOf<P extends TProperties, O extends keyof P & string>(schema: TObject<P>, ...omit: O[]): Exclude<keyof P & string, O>[] {
  return Object.keys(schema.properties).filter((name) => !(omit as string[]).includes(name)) as Exclude<keyof P & string, O>[]
}
