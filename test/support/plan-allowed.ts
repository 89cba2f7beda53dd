import type { AllowedRange } from './plan-rules.ts'

// The statements meant to read a range, or a whole small table (test/support/plan-rules.ts):
// each says why, which statements (a pattern of their text, as Kysely or the code writes it), and
// the plan line each database must keep for it. Anything else that reads more than its keys
// fails test/operations/query-plans.test.ts. An entry no statement uses any more fails it too.

/** An index of `table` searched by a range on its leading columns, on PostgreSQL (any scan type that searches it). */
const pgRange = (index: string, table: string, cond: string) =>
  new RegExp(
    `^(Index Scan|Index Scan Backward|Index Only Scan|Index Only Scan Backward|Bitmap Heap Scan) using ${index} on ${table}\\b.*(Index|Recheck) Cond: \\(+${cond}`,
  )

export const ALLOWED: AllowedRange[] = [
  // Outgoing webhooks.
  {
    why: 'PostgreSQL: the count of failing subscriptions for /metrics, of every shop: the failing range of (failing, next_attempt_us), or the whole table (a row per endpoint) where statistics say one value of failing holds every row, as it does while every endpoint answers. (SQLite searches subscriptions_due by failing, a lookup by key.)',
    statement: /^select count\(\*\) as "n" from "subscriptions" where "failing" = \S+$/,
    table: 'subscriptions',
    shape: {
      postgres:
        /^(Seq Scan on subscriptions|(Index Scan|Index Only Scan|Bitmap Heap Scan) using subscriptions_due on subscriptions\b.*(Index|Recheck) Cond: \(+failing = )/,
    },
  },
  {
    why: "A page of a shop's subscriptions in the console and the command line: the shop's range of (shop_id, id) from the cursor on, a row per endpoint, at most SUBSCRIPTIONS_PER_SHOP.",
    statement: /^select \* from "subscriptions" where "shop_id" = \S+ and "id" > \S+ order by "id" limit \S+$/,
    table: 'subscriptions',
    shape: {
      postgres: /^(Index Scan|Bitmap Heap Scan) using subscriptions_shop on subscriptions\b.*(Index|Recheck) Cond: \(+shop_id = /,
      sqlite: /^SEARCH subscriptions USING INDEX subscriptions_shop \(shop_id=\? AND id>\?\)$/,
    },
  },
  {
    why: "How many subscriptions a shop has, before it subscribes one more (SUBSCRIPTIONS_PER_SHOP): the shop's range of (shop_id, id), at most SUBSCRIPTIONS_PER_SHOP rows.",
    statement: /^select count\(\*\) as "n" from "subscriptions" where "shop_id" = \S+$/,
    table: 'subscriptions',
    shape: {
      postgres:
        /^(Seq Scan on subscriptions|(Index Only Scan|Index Scan|Bitmap Heap Scan) using subscriptions_shop on subscriptions\b.*(Index|Recheck) Cond: \(+shop_id = )/,
      sqlite: /^SEARCH subscriptions USING COVERING INDEX subscriptions_shop \(shop_id=\?\)$/,
    },
  },
  // Rewards.
  {
    why: 'The active pools of every shop, for the metric of codes left and /readyz: the rewards table whole (a few rows per shop), sampled every STORAGE_SAMPLE_SECONDS, not per request (src/repos/rewards-repo.ts, poolLevels).',
    statement: /^select "shop_id", "id", "name", "codes_added", "codes_issued" from "rewards" where "codes" = \S+ and "active" = \S+$/,
    table: 'rewards',
    shape: { postgres: /^Seq Scan on rewards\b/, sqlite: /^SCAN rewards$/ },
  },
  {
    why: "A new reward's id, its shop's highest plus one (src/repos/rewards-repo.ts, insertReward): the last key of the shop's range of the key, one row read (a few rows per shop at most).",
    statement: /^select max\("id"\) as "last" from "rewards" where "shop_id" = \S+$/,
    table: 'rewards',
    shape: {
      postgres: /^Index Only Scan (Backward )?using rewards_pkey on rewards\b.*Index Cond: \(+shop_id = /,
      sqlite: /^SEARCH rewards USING COVERING INDEX sqlite_autoindex_rewards_1 \(shop_id=\?\)$/,
    },
  },
  {
    why: "Whether a batch's shop has rewards, read with its rule (src/write/statements.ts rule): the first key of the shop's range of the rewards' key, one row read at most.",
    // Alone (SQLite), or the first of the load's round on PostgreSQL, which runs them as one statement.
    statement:
      /^(WITH q0 AS \()?SELECT rule, rule_version, expiry_schedule, program_schedule, time_zone, CASE WHEN EXISTS \(SELECT 1 FROM rewards WHERE rewards\.shop_id = shops\.id\)/,
    table: 'rewards',
    shape: {
      postgres: /^Index Only Scan using rewards_pkey on rewards\b.*Index Cond: \(+shop_id = shops\.id\)/,
      sqlite: /^SEARCH rewards (EXISTS )?USING COVERING INDEX sqlite_autoindex_rewards_1 \(shop_id=\?\)$/,
    },
  },
  {
    why: "A shop's catalogue, for reward.available, in a batch of a shop that has rewards (src/write/statements.ts rewardCatalogue): the shop's range of the rewards' key, a few rows per shop.",
    statement: /^(WITH q0 AS \()?SELECT id, points, min_tier, active, codes, codes_added, codes_issued FROM rewards WHERE shop_id = /,
    table: 'rewards',
    shape: {
      postgres: /^(Seq Scan on rewards|(Index Scan|Bitmap Heap Scan) using rewards_pkey on rewards\b.*(Index|Recheck) Cond: \(+shop_id = )/,
      sqlite: /^SEARCH rewards USING INDEX sqlite_autoindex_rewards_1 \(shop_id=\?\)$/,
    },
  },
  {
    why: 'The expiry sweeper finds the shops with rewards once a pass, for the points that became available by time alone (src/repos/points-repo.ts rewardShops): the rewards table whole, a few rows per shop.',
    statement: /^select distinct "shop_id" from "rewards"$/,
    table: 'rewards',
    shape: {
      postgres: /^(Seq Scan on rewards|Index Only Scan using rewards_pkey on rewards)\b/,
      sqlite: /^SCAN rewards( USING COVERING INDEX (sqlite_autoindex_rewards_1|rewards_shop))?$/,
    },
  },
  {
    why: 'The expiry sweeper reads up to when each shop with rewards was looked at, once a pass (src/repos/points-repo.ts rewardShops): the whole table, one row per shop with rewards.',
    statement: /^select "shop_id", "swept_us" from "reward_notice_sweeps"$/,
    table: 'reward_notice_sweeps',
    shape: { postgres: /^Seq Scan on reward_notice_sweeps\b/, sqlite: /^SCAN reward_notice_sweeps$/ },
  },
  {
    why: "A shop's rewards in id order (the console, the command line, the storefront's list): the shop's range of rewards_shop, a few rows per shop.",
    statement: /^select \* from "rewards" where "shop_id" = \S+ and active >= 0 (and "active" = \S+ )?order by "id"$/,
    table: 'rewards',
    shape: {
      postgres: /^(Seq Scan on rewards|(Index Scan|Bitmap Heap Scan) using rewards_shop on rewards\b.*(Index|Recheck) Cond: \(+shop_id = )/,
      sqlite: /^SEARCH rewards USING INDEX rewards_shop \(shop_id=\?\)$/,
    },
  },
  {
    why: "A shop's latest claims in the console, newest first: a page of the shop's range of claims_shop, in its order.",
    statement: /^select \* from "claims" where "shop_id" = \S+ and created_us >= 0 (and "id" < \S+ )?order by "id" desc limit \S+$/,
    table: 'claims',
    shape: {
      postgres: /^Index Scan Backward using claims_shop on claims\b.*Index Cond: \(+shop_id = /,
      sqlite: /^SEARCH claims USING INDEX claims_shop \(shop_id=\?( AND id<\?)?\)$/,
    },
  },
  {
    why: "A shop's latest referrals in the console, newest claim first: a page of the shop's range of referrals_shop (all) or referrals_refused (the refusals alone, for review), in its order.",
    statement:
      /^select \* from "referrals" where "shop_id" = \S+ and (claimed_us >= 0|status = 'refused') (and \(claimed_us, id\) < \(\S+, \S+\) )?order by "claimed_us" desc, "id" desc limit \S+$/,
    table: 'referrals',
    shape: {
      postgres: /^Index Scan Backward using referrals_(shop|refused) on referrals\b.*Index Cond: \(+shop_id = /,
      sqlite: /^SEARCH referrals USING INDEX referrals_(shop|refused) \(shop_id=\?.*\)$/,
    },
  },
  // A rule change.
  {
    why: "A rule that first counts history (tiers, exclusions) fills the shop's earnings from its ledger, replacing rows kept before (src/repos/rule-repo.ts fillEarnings): once in a shop's life, a scan of order_earnings, which holds the rows of shops whose programs count history.",
    statement: /^delete from "order_earnings" where "shop_id" = \S+$/,
    table: 'order_earnings',
    shape: {
      postgres: /^Seq Scan on order_earnings\b/,
      sqlite: /^SCAN order_earnings$/,
    },
  },
  // The console.
  {
    why: "A shop's rule history, newest first: the shop's range of rule_versions' key, at most 100 rows (src/repos/rule-repo.ts); a table of a few rows per shop, which PostgreSQL may scan whole once analyzed, or read as a bitmap of the shop's range and sort.",
    statement: /^select "version", "rule", "effective_us", "changed_by" from "rule_versions" where "shop_id" = \S+ order by "version" desc limit \S+$/,
    table: 'rule_versions',
    shape: {
      postgres:
        /^(Seq Scan on rule_versions|Index Scan Backward using rule_versions_pk on rule_versions .*Index Cond: \(shop_id = \$1\)|Bitmap Heap Scan using rule_versions_pk on rule_versions\s+Recheck Cond: \(shop_id = \$1\)$)/,
      sqlite: /^SEARCH rule_versions USING INDEX sqlite_autoindex_rule_versions_1 \(shop_id=\?\)$/,
    },
  },
  {
    why: "The console's events of every shop, newest first: a page of the receive-time index, the filters checked on its rows (src/repos/admin-events-repo.ts).",
    statement: /^select [^;]* from "events" (where \(received_us, id\) < \(\S+, \S+\) )?order by "received_us" desc, "id" desc limit \S+$/,
    table: 'events',
    shape: {
      postgres: /^Index Scan Backward using events_received on events\b/,
      sqlite: /^(SCAN events USING INDEX events_received|SEARCH events USING INDEX events_received \(received_us<\?\))$/,
    },
  },
  {
    why: "A shop's events in the console, newest first: a page of the shop's range of (shop_id, received_us, id), in its order, other filters checked on its rows; test/console/admin-events.test.ts checks that no sort comes with it.",
    statement: /from "events" where "shop_id" >= \S+ and "shop_id" <= \S+ .*order by "shop_id" desc, "received_us" desc, "id" desc limit/,
    table: 'events',
    shape: {
      postgres: pgRange('events_shop_received', 'events', 'shop_id >= '),
      sqlite: /^SEARCH events USING (COVERING )?INDEX events_shop_received \(shop_id>\? AND shop_id<\?/,
    },
  },
  {
    why: "The console's live stream polls the events received since its last look: a range of the receive-time index, at most 500 rows (src/routes/admin/stream.ts).",
    statement: /from "events" where "received_us" > \S+ order by "received_us" asc, "id" asc limit/,
    table: 'events',
    shape: { postgres: pgRange('events_received', 'events', 'received_us > '), sqlite: /^SEARCH events USING INDEX events_received \(received_us>\?\)$/ },
  },
  {
    why: "The console's statistics count the webhooks of the last minutes (of one shop or all) and the shops list those of the last day: a time range, of all shops or of the shop.",
    statement: /^select (received_us \/ 60000000 as "minute", "outcome"|"shop_id", "outcome"), count\(\*\) as "n" from "events"/,
    table: 'events',
    shape: {
      postgres: /^(Index Scan|Bitmap Heap Scan) using events_(shop_)?received on events\b.*(Index|Recheck) Cond: \(+(shop_id = \$\d+\) AND \()?received_us >= /,
      sqlite: /^SEARCH events USING INDEX events_(shop_)?received \((shop_id=\? AND )?received_us>\?\)$/,
    },
  },
  {
    why: "The shops list counts each listed shop's live customers: the shop's whole range, or all rows where the shop holds most of them.",
    statement: /^select "shop_id", count\(\*\) as "n" from "customers" where "shop_id" in/,
    table: 'customers',
    shape: {
      postgres: /^(Seq Scan on customers|(Index Scan|Bitmap Heap Scan) using \w+ on customers .*(Index|Recheck) Cond: \(shop_id = \$1\))/,
      sqlite: /^SEARCH customers USING (COVERING )?INDEX \w+ \(shop_id=\?\)$/,
    },
  },
  {
    why: "The shops list counts each listed shop's orders, and a points rebuild the orders of its shops: the shops' whole ranges, or all rows where they hold most of them.",
    statement: /^select ("shop_id", )?count\(\*\) as "n" from "orders" where "shop_id" in/,
    table: 'orders',
    shape: {
      postgres: /^(Seq Scan on orders|(Index Only Scan|Bitmap Heap Scan) using \w+ on orders .*(Index|Recheck) Cond: \(shop_id = (ANY \(ARRAY\[)?\$1)/,
      sqlite: /^SEARCH orders USING COVERING INDEX \w+ \(shop_id=\?\)$/,
    },
  },
  {
    why: "The shops list, newest first: a page of the shops' primary key.",
    statement: /^select "id", "name", "created_at" from "shops" (where "id" < \S+ )?order by "id" desc limit \S+$/,
    table: 'shops',
    shape: { postgres: /^Index Scan Backward using shops_pkey on shops\b/, sqlite: /^(SCAN shops|SEARCH shops USING INTEGER PRIMARY KEY \(rowid<\?\))$/ },
  },
  {
    why: "Every shop's name, to name each event's shop in the console's lists and stream: the whole shops table (one row per shop).",
    statement: /^select "id", "name" from "shops"$/,
    table: 'shops',
    shape: { postgres: /^Seq Scan on shops$/, sqlite: /^SCAN shops( USING COVERING INDEX sqlite_autoindex_shops_1)?$/ },
  },
  {
    why: "The expiry sweeper reads every shop's rule once a pass: the whole shops table.",
    statement: /^select "id", "rule", "rule_version", "expiry_schedule" from "shops" where "rule" is not null$/,
    table: 'shops',
    shape: { postgres: /^Seq Scan on shops\b/, sqlite: /^SCAN shops$/ },
  },
  {
    why: "A shop's customers in the console, newest first: a page of its primary key. On PostgreSQL the key leads with the id (migration 0010, so that no index of customers leads with the shop for a lookup to take): the page walks the ids down, other shops' customers among them checked and left.",
    statement: /^select \* from "customers" where "shop_id" = \S+ (and "id" < \S+ )?order by "id" desc limit \S+$/,
    table: 'customers',
    shape: {
      postgres: /^Index Scan Backward using customers_pk on customers\s+Index Cond: \(+(id < \$2\) AND \()?shop_id = \$1\)/,
      sqlite: /^SEARCH customers USING INDEX sqlite_autoindex_customers_1 \(shop_id=\?( AND id<\?)?\)$/,
    },
  },
  {
    why: "A shop's API keys in the console, newest first: the range of the shop's keys (a few, written by operators) in the index by shop and kind (migration 0031), sorted; without statistics PostgreSQL may walk the whole table or the primary key.",
    statement: /from "api_keys" where "shop_id" = \S+ (and "id" < \S+ )?order by "id" desc limit \S+$/,
    table: 'api_keys',
    shape: {
      postgres:
        /^(Seq Scan on api_keys|Index Scan Backward using api_keys_pkey on api_keys|Index Scan using api_keys_shop_kind on api_keys|Bitmap Heap Scan using api_keys_shop_kind on api_keys)\b/,
      sqlite: /^(SCAN api_keys|SEARCH api_keys USING INTEGER PRIMARY KEY \(rowid<\?\)|SEARCH api_keys USING INDEX api_keys_shop_kind \(shop_id=\?\))$/,
    },
  },
  {
    why: 'One key of a shop in the console, by its id: one row of the primary key, whose shop is then checked.',
    statement: /from "api_keys" where "shop_id" = \S+ and "id" = \S+$/,
    table: 'api_keys',
    shape: {
      postgres: /^Index Scan using api_keys_pkey on api_keys\s+Index Cond: \(id = \$\d\)\s+Filter: \(shop_id = \$\d\)$/,
      sqlite: /^SEARCH api_keys USING INTEGER PRIMARY KEY \(rowid=\?\)$/,
    },
  },
  {
    why: "Creating a shop (operators, rarely): SQLite checks the foreign key of api_keys on the shop's upsert, through the index by shop and kind (a range of the new shop's keys: none).",
    statement: /^insert into "shops" /,
    table: 'api_keys',
    shape: { sqlite: /^(SCAN api_keys|SEARCH api_keys USING COVERING INDEX api_keys_shop_kind \(shop_id=\?\))$/ },
  },
  {
    why: 'The audit log in the console, newest first: a page of its primary key.',
    statement: /from "audit_log" left join "shops" .* order by "audit_log"\."id" desc limit/,
    table: 'audit_log',
    shape: {
      postgres: /^Index Scan Backward using audit_log_pkey on audit_log\b/,
      sqlite: /^(SCAN audit_log|SEARCH audit_log USING INTEGER PRIMARY KEY \(rowid<\?\))$/,
    },
  },
  {
    why: 'Expired console sessions go as new ones come (src/repos/admin-repo.ts): the table holds the live sessions and few others, and has no index by expiry.',
    statement: /^delete from "admin_sessions" where "expires_us" <= /,
    table: 'admin_sessions',
    shape: { postgres: /^Seq Scan on admin_sessions\b/, sqlite: /^SCAN admin_sessions$/ },
  },

  // Pruning and the storage sample.
  {
    why: 'Pruning takes the oldest events received before the cutoff, 500 at a time: a range of the receive-time index (src/repos/prune.ts).',
    statement: /from "events" where "received_us" < \S+ order by "received_us" limit/,
    table: 'events',
    shape: { postgres: pgRange('events_received', 'events', 'received_us < '), sqlite: /^SEARCH events USING INDEX events_received \(received_us<\?\)$/ },
  },
  {
    why: 'Pruning deletes the events it took, within the span of receive times it read them from (src/repos/prune.ts).',
    statement: /^delete from "events" where "received_us" >= \S+ and "received_us" <= \S+ and "id"/,
    table: 'events',
    shape: {
      postgres:
        /^(Index Scan using events_received on events\s+Index Cond|Bitmap Heap Scan using events_received on events\s+Recheck Cond): \(\(received_us >= \$1\) AND \(received_us <= \$2\)\)/,
    },
  },
  {
    why: "The oldest event's receive time (the storage sample, the prune status): the first entry of the receive-time index.",
    statement: /^select min\("received_us"\) as "oldest" from "events"$/,
    table: 'events',
    shape: { postgres: /^Index Only Scan using events_received on events\b/, sqlite: /^SEARCH events USING COVERING INDEX events_received$/ },
  },
  {
    why: 'How many events a prune would delete (the prune status): a count of the range before the cutoff.',
    statement: /^select count\(\*\) as "count" from "events" where "received_us" < \S+$/,
    table: 'events',
    shape: {
      postgres: pgRange('events_received', 'events', 'received_us < '),
      sqlite: /^SEARCH events USING COVERING INDEX events_received \(received_us<\?\)$/,
    },
  },

  // Points upkeep.
  {
    why: "The expiry sweeper's highest ledger id, where the next pass starts: the last entry of the primary key.",
    statement: /^select max\("id"\) as "id" from "ledger"$/,
    table: 'ledger',
    shape: { postgres: /^Index Only Scan Backward using ledger_pkey on ledger\b/, sqlite: /^SEARCH ledger$/ },
  },
  {
    why: "The expiry sweeper finds whom to ask: the entries dated within the ranges that fell due (all that are due on a first pass, those that fell due since the last on a later one), or the entries written since the last pass within the due ranges (src/repos/points-repo.ts dueCandidates). A range of dates or of ids across shops, the shop and the customer checked on its rows: ledger_available holds only the date, so that no lookup of a customer's lots can take it (migration 0010).",
    statement: /^select distinct "customer_id" from "ledger" where \+"shop_id" = \S+ and \+"customer_id" is not null and \+?"available_us" >= /,
    table: 'ledger',
    shape: {
      postgres:
        /^((Index Scan|Bitmap Heap Scan) using ledger_available on ledger .*(Index|Recheck) Cond: \(\(available_us >= \$2\) AND \(available_us <= \$3\)\)|(Index Scan|Bitmap Heap Scan) using ledger_pkey on ledger\s+(Index|Recheck) Cond: \(id > \$4\))/,
      sqlite: /^(SEARCH ledger USING INDEX ledger_available \(available_us>\? AND available_us<\?\)|SEARCH ledger USING INTEGER PRIMARY KEY \(rowid>\?\))/,
    },
  },
  {
    why: 'The points sweeper finds the customers whose tier time alone may have changed: the soonest due of customers_tier_check, a partial index of the date alone across shops, holding only the customers with a check to make (src/repos/points-repo.ts tierChecksDue, migration 0022).',
    statement: /^select "shop_id", "id" from "customers" where "tier_check_us" <= \S+ order by "tier_check_us" limit \S+$/,
    table: 'customers',
    shape: {
      postgres: /^Index Scan using customers_tier_check on customers\s+Index Cond: \(tier_check_us <= \$1\)$/,
      sqlite: /^SEARCH customers USING INDEX customers_tier_check \(tier_check_us<\?\)$/,
    },
  },
  {
    why: "The expiry sweeper finds the customers whose imported points' own expires_at has come: the soonest due of customers_expiry_check, a partial index of the date alone across shops, holding only the customers with such a date not yet settled (src/repos/points-repo.ts fixedExpiriesDue, migration 0029).",
    statement: /^select "shop_id", "id" from "customers" where "expiry_check_us" <= \S+ order by "expiry_check_us" limit \S+$/,
    table: 'customers',
    shape: {
      postgres: /^Index Scan using customers_expiry_check on customers\s+Index Cond: \(expiry_check_us <= \$1\)$/,
      sqlite: /^SEARCH customers USING INDEX customers_expiry_check \(expiry_check_us<\?\)$/,
    },
  },
  {
    why: "A points rebuild, and the fill of a rule that first counts history (src/repos/rule-repo.ts), walk a shop's orders by id, 500 at a time: pages of the primary key (src/repos/rebuild-repo.ts); on PostgreSQL it leads with the id (migration 0010), other shops' orders among them checked and left.",
    statement: /^select "id" from "orders" where "shop_id" = \S+ and "id" > \S+ order by "id" limit \S+$/,
    table: 'orders',
    shape: {
      postgres: pgRange('orders_pk', 'orders', 'id > \\$2\\) AND \\(shop_id = \\$1'),
      sqlite: /^SEARCH orders USING COVERING INDEX sqlite_autoindex_orders_1 \(shop_id=\? AND id>\?\)$/,
    },
  },
  {
    why: "A points rebuild walks a shop's customers with entries, 500 at a time: pages of the shop's range of ledger_customer (src/repos/rebuild-repo.ts).",
    statement: /^select distinct "customer_id" from "ledger" where .*"customer_id" > \S+ order by "customer_id" limit \S+$/,
    table: 'ledger',
    shape: {
      postgres: pgRange('ledger_customer', 'ledger', 'customer_id > \\$2\\) AND \\(shop_id = '),
      sqlite: /^SEARCH ledger USING COVERING INDEX ledger_customer \(customer_id>\?\)$/,
    },
  },

  {
    why: "The points liability report reads a shop's rollup of its customers' ledger up to a day (ledger_days, migration 0020, kept by the write path): a range of its primary key, a few rows a day however many entries (src/repos/report-repo.ts).",
    statement: /^select "day", "available_day", "reason", "points" from "ledger_days" where "shop_id" = \S+ and "day" < \S+$/,
    table: 'ledger_days',
    shape: {
      postgres: pgRange('ledger_days_pk', 'ledger_days', 'shop_id = \\$1\\) AND \\(day < '),
      sqlite: /^SEARCH ledger_days USING INDEX sqlite_autoindex_ledger_days_1 \(shop_id=\? AND day<\?\)$/,
    },
  },

  // The program dashboard (src/repos/dashboard-repo.ts, docs/program/dashboard.md).
  {
    why: "The dashboard reads a shop's rollup of its members, orders and tiers up to a day (dashboard_days, migration 0036, kept by the write path): a range of its primary key, a few rows a day however many customers and orders.",
    statement: /^select "day", "figure", "key", "n", "amount" from "dashboard_days" where "shop_id" = \S+ and "day" <= \S+$/,
    table: 'dashboard_days',
    shape: {
      postgres: pgRange('dashboard_days_pk', 'dashboard_days', 'shop_id = \\$1\\) AND \\(day <= '),
      sqlite: /^SEARCH dashboard_days USING INDEX sqlite_autoindex_dashboard_days_1 \(shop_id=\? AND day<\?\)$/,
    },
  },
  {
    why: "The dashboard's repeat rate: two sums over the days of a range of a shop's repeat_days (migration 0036), each row a day's orders keyed by the days of the two orders before (src/loyalty/dashboard-facts.ts RepeatDayRow).",
    statement:
      /^select coalesce\(sum\(CASE WHEN prev_day < \S+ THEN n ELSE 0 END\), 0\) as "buyers", .* from "repeat_days" where "shop_id" = \S+ and "day" >= \S+ and "day" <= \S+$/,
    table: 'repeat_days',
    shape: {
      postgres: pgRange('repeat_days_pk', 'repeat_days', 'shop_id = '),
      sqlite: /^SEARCH repeat_days USING INDEX sqlite_autoindex_repeat_days_1 \(shop_id=\? AND day>\? AND day<\?\)$/,
    },
  },
  {
    why: "The dashboard's referrals: those a shop's friends claimed in a range, counted by status and reason: the range of referrals_shop (shop_id, claimed_us), the console's list's index.",
    statement:
      /^select "status", "reason", count\(\*\) as "n" from "referrals" where "shop_id" = \S+ and claimed_us >= 0 and "claimed_us" >= \S+ and "claimed_us" < \S+ group by "status", "reason"$/,
    table: 'referrals',
    shape: {
      postgres: pgRange('referrals_shop', 'referrals', 'shop_id = '),
      sqlite: /^SEARCH referrals USING INDEX referrals_shop \(shop_id=\? AND claimed_us>\? AND claimed_us<\?\)$/,
    },
  },
  {
    why: "The dashboard's claims of a range, by reward: the shop's range of claims_shop (its claims in the order made), filtered by when each was made; a shop's claims are a few a member at most. PostgreSQL reads the table whole where its statistics say the shop holds most of it, as in this test's fill.",
    statement:
      /^select "reward_id", CASE WHEN cancelled_us IS NULL THEN 0 ELSE 1 END as "cancelled", .* from "claims" where "shop_id" = \S+ and created_us >= 0 and "created_us" >= \S+ and "created_us" < \S+ group by /,
    table: 'claims',
    shape: {
      postgres: new RegExp(`(${pgRange('claims_shop', 'claims', 'shop_id = ').source})|^Seq Scan on claims\\b`),
      sqlite: /^SEARCH claims USING INDEX claims_shop \(shop_id=\?\)$/,
    },
  },

  // The change feed.
  {
    why: "A shop's change feed, after one of its positions: a page of the shop's range of (shop_id, shop_position) (GET /v3/changes).",
    statement: /from "feed" where "shop_id" = \S+ and "shop_position" > \S+ order by "shop_position" limit \S+$/,
    table: 'feed',
    shape: {
      postgres: pgRange('feed_shop', 'feed', 'shop_id = \\$1\\) AND \\(shop_position > '),
      sqlite: /^SEARCH feed USING INDEX feed_shop \(shop_id=\? AND shop_position>\?\)$/,
    },
  },
  {
    why: "The relay's pages of every shop's changes after its cursor, and the oldest it has not published: a range of the primary key, the last position of each row.",
    statement: /from "feed" where "position" > \S+ order by "position" limit \S+$/,
    table: 'feed',
    shape: { postgres: pgRange('feed_pkey', 'feed', '"position" > '), sqlite: /^SEARCH feed USING INDEX sqlite_autoindex_feed_1 \(position>\?\)$/ },
  },
  {
    why: 'The highest position given so far (readers waiting for the next entry watch it): the last entry of the primary key.',
    statement: /^select "position" from "feed" order by "position" desc limit \S+$/,
    table: 'feed',
    shape: { postgres: /^Index Only Scan Backward using feed_pkey on feed\b/, sqlite: /^SCAN feed USING COVERING INDEX sqlite_autoindex_feed_1$/ },
  },
  {
    why: 'A batch takes its feed positions from the one row of feed_head (src/write/postgres/statement-factory.ts): after ANALYZE PostgreSQL reads a table of one row whole, rightly.',
    statement: /UPDATE feed_head SET position = position \+ \S+ WHERE id = 1/,
    table: 'feed_head',
    shape: { postgres: /^(Seq Scan on feed_head|Index Scan using feed_head_pkey on feed_head)\b/ },
  },
  {
    why: "A batch's feed row takes its shop's positions from that shop's one row of feed_shop_head, whose key is shop_id alone (src/write/sqlite/statement-factory.ts).",
    statement: /VALUES .*\(SELECT position FROM feed_shop_head WHERE shop_id = \?\)/,
    table: 'feed_shop_head',
    shape: { sqlite: /^SEARCH feed_shop_head USING INDEX sqlite_autoindex_feed_shop_head_1 \(shop_id=\?\)$/ },
  },
  {
    why: "A new webhook subscription starts after its shop's last position: the shop's one row of feed_shop_head, whose key is shop_id alone (src/repos/changes-repo.ts).",
    statement: /^select "position" from "feed_shop_head" where "shop_id" = \S+$/,
    table: 'feed_shop_head',
    shape: {
      postgres: /^(Seq Scan on feed_shop_head|Index Scan using feed_shop_head_pkey on feed_shop_head)\b/,
      sqlite: /^SEARCH feed_shop_head USING INDEX sqlite_autoindex_feed_shop_head_1 \(shop_id=\?\)$/,
    },
  },
]
