import { sql, type Kysely } from 'kysely'

/**
 * Who wrote each version of a shop's rule (the operator's name, or `command line (<OS user>)`),
 * for the rule's history in the admin API and the console. Versions written before it take the
 * name the audit log recorded for them (`rule.set`, whose target is the version), and keep null
 * where it recorded none (the default version 1, versions from before the audit log).
 */
export const ruleAuthors = {
  async up(db: Kysely<any>): Promise<void> {
    await db.schema.alterTable('rule_versions').addColumn('changed_by', 'text').execute()
    await sql`
      UPDATE rule_versions SET changed_by = (
        SELECT a.operator FROM audit_log a
        WHERE a.action = 'rule.set' AND a.shop_id = rule_versions.shop_id AND a.target = CAST(rule_versions.version AS text)
        ORDER BY a.id DESC LIMIT 1
      )`.execute(db)
  },
}
