import { sql, type Kysely } from 'kysely'

/**
 * PostgreSQL: a NOTIFY on channel `shop_intake_keys` whenever a key is created, revoked or
 * deleted, whoever does it (the command line, an admin API, SQL by hand), with the schema and the
 * key's hash as payload, sent when the change commits. Every server process listens
 * (src/jobs/key-revocations.ts) and drops the key from its cache, so a revoke reaches all of them
 * at once rather than after KEY_CACHE_SECONDS. SQLite has no NOTIFY (and runs one server process).
 */
export function keyNotify(kind: 'sqlite' | 'postgres') {
  return {
    async up(db: Kysely<any>): Promise<void> {
      if (kind !== 'postgres') return
      await sql`
        CREATE FUNCTION shop_intake_key_changed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM pg_notify('shop_intake_keys', TG_TABLE_SCHEMA || ' ' || (CASE TG_OP WHEN 'DELETE' THEN OLD.key_hash ELSE NEW.key_hash END));
          RETURN NULL;
        END $$`.execute(db)
      await sql`CREATE TRIGGER api_keys_inserted AFTER INSERT ON api_keys FOR EACH ROW EXECUTE FUNCTION shop_intake_key_changed()`.execute(db)
      await sql`
        CREATE TRIGGER api_keys_revoked AFTER UPDATE OF revoked_at, key_hash ON api_keys FOR EACH ROW
        WHEN (OLD.revoked_at IS DISTINCT FROM NEW.revoked_at OR OLD.key_hash IS DISTINCT FROM NEW.key_hash)
        EXECUTE FUNCTION shop_intake_key_changed()`.execute(db)
      await sql`CREATE TRIGGER api_keys_deleted AFTER DELETE ON api_keys FOR EACH ROW EXECUTE FUNCTION shop_intake_key_changed()`.execute(db)
    },
  }
}
