// What a route checks a value against before it asks the database anything. A path id that is not
// one of these names no resource: the routes answer it 404, as they would an id nobody stored.

const ID = /^[1-9]\d{0,15}$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const EVENT_ID = /^[0-9a-f-]{36}$/

/** A path id (a customer, an order, a key): a positive integer exact as a JavaScript number, else undefined. */
export const parseId = (text: string): number | undefined => (ID.test(text) && Number.isSafeInteger(Number(text)) ? Number(text) : undefined)

/**
 * A redemption's or a claim's id in a path, as the service writes them (lower case): a UUID in
 * either case names the same one (RFC 4122 reads hex digits without regard to case), else undefined.
 */
export const uuidOf = (text: string): string | undefined => (UUID.test(text) ? text.toLowerCase() : undefined)

/** An event id as the service answers them: 36 characters of hex digits and dashes, anything else never stored. */
export const isEventId = (text: string): boolean => EVENT_ID.test(text)

/** A JSON object: not null, not an array. */
export const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)
