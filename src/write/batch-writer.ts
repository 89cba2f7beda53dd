import type { BatchItem } from '../batch/commands.ts'
import type { Pruned } from '../repos/prune.ts'
import type { RuleWrite } from '../repos/rule-repo.ts'
import type { TimeZoneWrite } from '../repos/shop-repo.ts'
import type { BatchResult } from './unit-of-work.ts'

/** Commits batches of webhooks and points commands; each resolves only once its batch is durable. */
export interface BatchWriter {
  /** `atUs` is the time balances are settled at (src/batch/decide.ts): the service's clock when the batch starts. */
  apply(batch: BatchItem[], atUs: number): Promise<BatchResult[]>
  /** Deletes up to `limit` of the oldest events received before `cutoffUs` in one transaction (src/repos/prune.ts). */
  prune(cutoffUs: number, limit: number): Promise<Pruned>
  /**
   * Resolves when this writer can commit now; rejects while it is starting or once it has died.
   * Absent when the writer is ready whenever the database answers (PostgreSQL).
   */
  ping?(): Promise<void>
  /** Records that these keys were used at `at` (ISO 8601), for keys list; on SQLite, on the writer's connection. */
  touchKeys(keyIds: readonly number[], at: string): Promise<void>
  /**
   * Runs write statements in one transaction of its own on the write connection (on SQLite, the
   * writer thread's), one after another; the rows each returned (a RETURNING clause's), in order.
   */
  write(...queries: { sql: string; parameters: readonly unknown[] }[]): Promise<unknown[][]>
  /**
   * Changes a shop's rule (src/repos/rule-repo.ts writeRuleIn) in one transaction on the write
   * path: on SQLite the writer thread's, between two batches, so it never waits for the write lock
   * on another connection (where it failed with "database is locked" under load). The new version,
   * or null when the rule is no longer at `expectedVersion`.
   */
  writeRule(w: RuleWrite): Promise<number | null>
  /**
   * Changes a shop's time zone (src/repos/shop-repo.ts writeTimeZoneIn) on the write path, as
   * writeRule does: the zone before, or null when it was this one already.
   */
  writeTimeZone(w: TimeZoneWrite): Promise<string | null>
  close(): Promise<void>
}
