import type { FastifyInstance, FastifyRequest } from 'fastify'
import { formatUs } from '../../domain/time.ts'
import { commandBodyProblem, sendProblem, shopByName } from '../../http/intake/index.ts'
import { nextVersion, type RuleChanges } from '../../loyalty/rule-changes.ts'
import { normalizeRule, parseStoredRule, type Rule } from '../../loyalty/rule.ts'
import { ADMIN_PROBLEMS, ShopParams } from '../../schemas/admin.ts'
import { RuleBody, RuleView } from '../../schemas/rule.ts'
import { recordAudit } from '../../store/admin-repo.ts'
import { changeRule, ruleHistory } from '../../store/rule-repo.ts'
import type { Tables } from '../../store/tables.ts'
import type { Kysely } from 'kysely'
import { readAnswer } from '../resources.ts'
import { ADMIN_SECURITY, TAGS, type AdminContext } from './common.ts'

// A shop's points rule in the admin API: the current version with its history, and a new
// version by PUT, in effect from the moment it is written, and written to the audit log as the
// command line's `rules set` is.

const HISTORY = 100

async function ruleView(db: Kysely<Tables>, shop: { id: number; name: string }) {
  const history = (await ruleHistory(db, shop.id, HISTORY)).map((v) => ({
    version: v.version,
    effective_at: formatUs(v.effective_us),
    rule: parseStoredRule(v.rule),
  }))
  const current = history[0]!
  return { shop: shop.name, version: current.version, effective_at: current.effective_at, rule: current.rule, history }
}

export async function ruleRoutes(app: FastifyInstance, ctx: AdminContext): Promise<void> {
  const { services } = ctx
  const { db } = services.backend

  app.get(
    '/v3/admin/shops/:shop/rule',
    {
      onRequest: ctx.onRequest,
      schema: {
        summary: "The shop's points rule: the current version and its history",
        operationId: 'adminGetRule',
        tags: TAGS,
        security: ADMIN_SECURITY,
        params: ShopParams,
        response: { 200: readAnswer('The rule', RuleView), ...ADMIN_PROBLEMS(404) },
      },
    },
    async (request: FastifyRequest<{ Params: { shop: string } }>) => ruleView(db, await shopByName(services, request.params.shop)),
  )

  app.put(
    '/v3/admin/shops/:shop/rule',
    {
      onRequest: ctx.onRequest,
      attachValidation: true,
      schema: {
        summary: "Change the shop's points rule: a new version, in effect from now",
        operationId: 'adminPutRule',
        tags: TAGS,
        security: ADMIN_SECURITY,
        description:
          'The body is the whole rule, every option as GET answers it. A rule that differs from the current one becomes a new version, in effect from ' +
          'the moment it is written, and goes to the audit log (`rule.set`, with each changed option from and to). The same rule again changes nothing ' +
          'and answers the current version.',
        params: ShopParams,
        body: RuleBody,
        response: { 200: readAnswer('The rule, after the change', RuleView), ...ADMIN_PROBLEMS(404, 413, 415, 422) },
      },
    },
    async (request: FastifyRequest<{ Params: { shop: string } }>, reply) => {
      const shop = await shopByName(services, request.params.shop)
      const refused = commandBodyProblem(request, 'rule')
      if (refused) return sendProblem(reply, refused)
      const next: Rule = normalizeRule(request.body)
      let changes: RuleChanges = {}
      const written = await changeRule(db, shop.id, ctx.nowUs(), (stored) => {
        const version = nextVersion(parseStoredRule(stored.rule), stored.expiry_schedule, next, ctx.nowUs())
        changes = version?.changes ?? {}
        return version
      })
      if (written.changed) {
        await recordAudit(db, request.operator, {
          action: 'rule.set',
          shopId: shop.id,
          target: String(written.version),
          detail: { version: written.version, changes },
        })
      }
      return ruleView(db, shop)
    },
  )
}
