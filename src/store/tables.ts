import type { Generated } from 'kysely'

// Row types of the database. They stay inside src/store: the rest of the
// program speaks in the domain's records. Flags are 0/1 integers on both
// databases, money is integer minor units, instants are epoch microseconds.

export interface ShopsTable {
  id: Generated<number>
  name: string
  created_at: string
  rule: string | null
  rule_version: Generated<number>
}

export interface ApiKeysTable {
  id: Generated<number>
  shop_id: number
  key_hash: string
  hint: string
  created_at: string
  last_used_at: string | null
  revoked_at: string | null
}

export interface EventsTable {
  id: string
  shop_id: number
  topic: string
  resource_id: number | null
  customer_id: number | null
  received_at: string
  received_us: number
  body: Uint8Array
  headers: string
  outcome: string
  duplicate_of: string | null
  errors: string | null
}

export interface DedupKeysTable {
  shop_id: number
  key: string
  event_id: string
}

export interface CustomersTable {
  shop_id: number
  id: number
  first_name: string | null
  last_name: string | null
  email: string | null
  email_lower: string | null
  is_newsletter: number | null
  tags: string | null
  created_at: string | null
  updated_at: string | null
  deleted: number
  version_us: number
  arrival_us: number
  /** The version of the newest delete ever received; kept when the customer registers again. */
  erased_us: number | null
}

export interface OrdersTable {
  shop_id: number
  id: number
  currency: string | null
  email: string | null
  email_lower: string | null
  ref: string | null
  total: number | null
  subtotal: number | null
  amount_shipping: number | null
  amount_giftcard: number | null
  amount_tax: number | null
  cancelled_at: string | null
  cancelled_us: number | null
  processed_at: string | null
  is_fulfilled: number
  is_refunded: number
  is_paid: number
  customer_id: number | null
  customer_link_us: number | null
  customer_snapshot_us: number | null
  updated_at: string | null
  updated_us: number | null
  arrival_us: number
}

export interface LedgerTable {
  id: Generated<number>
  shop_id: number
  order_id: number | null
  customer_id: number | null
  guest_email: string | null
  points: number
  reason: string
  amount_minor: number
  currency: string | null
  rate: string
  rule_version: number
  created_at: string
  available_at: string
  available_us: number
}

export interface Tables {
  ledger: LedgerTable
  shops: ShopsTable
  api_keys: ApiKeysTable
  events: EventsTable
  dedup_keys: DedupKeysTable
  customers: CustomersTable
  orders: OrdersTable
}
