import type { FastifyInstance, FastifyRequest } from 'fastify'
import { fromMinor } from '../../domain/money.ts'
import { formatUs } from '../../domain/time.ts'
import { commandBodyProblem, notFound, problem, sendProblem, shopByName } from '../../http/intake/index.ts'
import { addMemberBodyErrors } from '../../http/json-body.ts'
import { nextVersion, type RuleChanges } from '../../loyalty/rule-changes.ts'
import { bodyRuleFaults, normalizeRule, parseStoredRule, type Rule } from '../../loyalty/rule.ts'
import { ADMIN_PROBLEMS, ShopParams } from '../../schemas/admin.ts'
import { RuleBody, RulePreview, RulePreviewBody, RuleView } from '../../schemas/rule.ts'
import type { OrderBody } from '../../schemas/webhooks.ts'
import { recordAudit } from '../../repos/admin-repo.ts'
import { changeRule, readRule, RewardsNeedTiers, ruleHistory } from '../../repos/rule-repo.ts'
import { shopRewards } from '../../repos/rewards-repo.ts'
import { strandedRewards, tierNamesOf } from '../../loyalty/rewards.ts'
import type { Tables } from '../../db/tables.ts'
import type { Kysely } from 'kysely'
import { previewOrderPoints } from '../../write/preview.ts'
import { readAnswer } from '../resources.ts'
import { ADMIN_SECURITY, TAGS, type AdminContext } from './common.ts'

// A shop's points rule in the admin API: the current version with its history, a new version by
// PUT, in effect from the moment it is written, and written to the audit log as the command
// line's `rules set` is; and the preview of what an order would earn, under the current rule or
// a proposed one, which writes nothing (src/write/preview.ts).

const HISTORY = 100

/** The 422 of a rule the schema accepts but whose tiers are out of order or whose tag tiers name none (ruleFaults). */
function faultsProblem(what: string, faults: { pointer: string; detail: string }[]) {
  if (faults.length === 0) return undefined
  return problem('invalid-body', `the ${what} has ${faults.length} invalid field${faults.length === 1 ? '' : 's'}`, {
    error_count: faults.length,
    errors: faults,
  })
}

/** What changing the shop's rule to `next` would strand: its active rewards that need a tier `next` drops (strandedRewards). */
async function strandedBy(db: Kysely<Tables>, shopId: number, next: Rule, pointer: string) {
  const [{ rule }, rewards] = await Promise.all([readRule(db, shopId), shopRewards(db, shopId, true)])
  const needs = rewards.map((r) => ({ id: Number(r.id), name: r.name, min_tier: r.min_tier }))
  return strandedRewards(tierNamesOf(parseStoredRule(rule)), tierNamesOf(next), needs, pointer)
}

async function ruleView(db: Kysely<Tables>, shop: { id: number; name: string }) {
  const history = (await ruleHistory(db, shop.id, HISTORY)).map((v) => ({
    version: v.version,
    effective_at: formatUs(v.effective_us),
    rule: parseStoredRule(v.rule),
    changed_by: v.changed_by,
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
      const refused = commandBodyProblem(request, 'rule', (body) => bodyRuleFaults(body)) ?? faultsProblem('rule', bodyRuleFaults(request.body))
      if (refused) return sendProblem(reply, refused)
      const next: Rule = normalizeRule(request.body)
      let changes: RuleChanges = {}
      const written = await changeRule(
        db,
        shop.id,
        ctx.nowUs(),
        (stored) => {
          const version = nextVersion(parseStoredRule(stored.rule), stored.expiry_schedule, next, ctx.nowUs(), stored.program_schedule)
          changes = version?.changes ?? {}
          return version
        },
        request.operator.name,
        // Through the writer: on SQLite, in line with the batches (src/write/batch-writer.ts).
        (w) => services.batchWriter.writeRule(w),
      ).catch((err: unknown) => {
        if (err instanceof RewardsNeedTiers) return err
        throw err
      })
      if (written instanceof RewardsNeedTiers) return sendProblem(reply, faultsProblem('rule', written.faults)!)
      if (written.changed) {
        await recordAudit(
          db,
          request.operator,
          {
            action: 'rule.set',
            shopId: shop.id,
            target: String(written.version),
            detail: { version: written.version, changes },
          },
          ctx.nowUs(),
        )
      }
      return ruleView(db, shop)
    },
  )

  app.post(
    '/v3/admin/shops/:shop/rule/preview',
    {
      onRequest: ctx.onRequest,
      attachValidation: true,
      // It writes nothing: a viewer may ask too.
      config: { viewersMay: true },
      schema: {
        summary: 'What an order would earn, under the current rule or a proposed one; writes nothing',
        operationId: 'adminPreviewRule',
        tags: TAGS,
        security: ADMIN_SECURITY,
        description:
          'The order as its webhook carries it, taken as new (what a stored order of the same id holds does not count), merged and credited as the ' +
          'write path would: to `customer_id` when given (a customer the shop has sent; else 404), else to the customer it embeds or its e-mail finds, ' +
          'else held for its guest e-mail. Its points come from the same rule as an order webhook: the current version, or `rule`, the whole rule as PUT ' +
          'takes it, tried as if saved now (its expiry counts from now, as after PUT). Nothing is written, and the audit log records nothing. A viewer may call it.',
        params: ShopParams,
        body: RulePreviewBody,
        response: { 200: readAnswer('What the order would earn', RulePreview), ...ADMIN_PROBLEMS(404, 413, 415, 422) },
      },
    },
    async (request: FastifyRequest<{ Params: { shop: string } }>, reply) => {
      const shop = await shopByName(services, request.params.shop)
      addMemberBodyErrors(request, { order: RulePreviewBody.properties.order, rule: RuleBody })
      const refused =
        commandBodyProblem(request, 'preview', (body) => bodyRuleFaults(body.rule, '/rule')) ??
        faultsProblem('preview', bodyRuleFaults((request.body as { rule?: unknown }).rule, '/rule'))
      if (refused) return sendProblem(reply, refused)
      const body = request.body as { order: OrderBody; customer_id?: number; rule?: unknown }
      // A proposed rule is checked as PUT would check it: it may not take a tier from the rewards that need it.
      if (body.rule !== undefined) {
        const stranding = faultsProblem('preview', await strandedBy(db, shop.id, normalizeRule(body.rule), '/rule/tiers'))
        if (stranding) return sendProblem(reply, stranding)
      }
      const preview = await previewOrderPoints(
        services.backend,
        shop.id,
        { order: body.order, customerId: body.customer_id, rule: body.rule === undefined ? undefined : normalizeRule(body.rule) },
        ctx.nowUs(),
      )
      if ('unknownCustomer' in preview) throw notFound(`no customer ${preview.unknownCustomer} in shop ${shop.name}`)
      const { target, owner } = preview
      const basis = target.basis
      return {
        shop: shop.name,
        points: target.points,
        why: target.why,
        customer_id: owner.state === 'customer' ? owner.customerId : null,
        guest_email: owner.state === 'guest' ? owner.guestEmail : null,
        tier: preview.tier,
        rule_version: preview.ruleVersion,
        proposed_version: preview.proposedVersion,
        basis: basis && {
          amount: fromMinor(basis.amount_minor),
          currency: basis.currency,
          rate: basis.rate,
          multiplier: basis.multiplier ?? '1',
          rule_version: preview.ruleVersion,
        },
        available_at: basis && formatUs(basis.available_us),
        expires_at: preview.expiresUs === null ? null : formatUs(preview.expiresUs),
      }
    },
  )
}
