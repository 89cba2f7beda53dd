import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { commandBodyProblem, notFound, parseId, problem, sendProblem, shopByName } from '../../http/intake/index.ts'
import { readCodes } from '../../loyalty/rewards.ts'
import {
  changedRewardProblems,
  changeReward,
  claimRowView,
  createReward,
  findReward,
  newRewardProblems,
  rewardView,
  shopTiers,
} from '../../rewards/catalogue.ts'
import { ADMIN_PROBLEMS, PageQuery, ShopParams } from '../../schemas/admin.ts'
import { AdminClaimList, CodesAdded, CodesBody, RewardBody, RewardList, RewardPatch, RewardView, ShopRewardParams } from '../../schemas/rewards.ts'
import { CODES_PER_UPLOAD_MAX } from '../../loyalty/rewards.ts'
import { recordAudit } from '../../repos/admin-repo.ts'
import { addCodes, latestClaims, shopRewards } from '../../repos/rewards-repo.ts'
import { installCsvBody } from '../../http/csv-body.ts'
import { readAnswer } from '../resources.ts'
import { ADMIN_SECURITY, decodeCursor, limitOf, listOf, TAGS, type AdminContext } from './common.ts'

// The rewards catalogue of a shop (docs/program/rewards.md): operators add, change and remove rewards
// (a removed one is only made inactive, so that past claims still name it) and upload the codes of
// a pool; viewers read. Every change is audited. Claims are the storefront's (src/routes/rewards.ts).

export async function rewardRoutes(scope: FastifyInstance, ctx: AdminContext): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>()
  const { services } = ctx
  const { db } = services.backend
  const base = '/v3/admin/shops/:shop/rewards'
  const doc = { tags: TAGS, security: ADMIN_SECURITY }

  async function rewardOf(params: { shop: string; id: string }) {
    const shop = await shopByName(services, params.shop)
    const id = parseId(params.id)
    const reward = id === undefined ? undefined : await findReward(db, shop.id, id)
    if (!reward) throw notFound(`no reward ${params.id} in shop ${shop.name}`)
    return { shop, reward }
  }

  app.get(
    base,
    {
      onRequest: ctx.onRequest,
      schema: {
        ...doc,
        summary: "A shop's rewards, inactive ones too, with each pool's codes left",
        operationId: 'adminListRewards',
        params: ShopParams,
        response: { 200: readAnswer('The rewards, in id order', RewardList), ...ADMIN_PROBLEMS(404) },
      },
    },
    async (request) => {
      const shop = await shopByName(services, request.params.shop)
      return { items: (await shopRewards(db, shop.id)).map(rewardView) }
    },
  )

  app.post(
    base,
    {
      onRequest: ctx.onRequest,
      attachValidation: true,
      schema: {
        ...doc,
        summary: 'Add a reward to the catalogue',
        operationId: 'adminCreateReward',
        description:
          'fixed_amount takes `value` (such as "5.00") and `currency`; percentage takes `value` (1 to 100); free_shipping and custom take neither. ' +
          '`min_tier` must name a tier of the shop. Every invalid field is named in one 422.',
        params: ShopParams,
        body: RewardBody,
        response: { 201: readAnswer('The reward, made', RewardView), ...ADMIN_PROBLEMS(404, 413, 415, 422) },
      },
    },
    async (request, reply) => {
      const shop = await shopByName(services, request.params.shop)
      const tiers = await shopTiers(db, shop.id)
      const refused = commandBodyProblem(request, 'reward', (body) => newRewardProblems(body, tiers))
      if (refused) return sendProblem(reply, refused)
      const problems = newRewardProblems(request.body, tiers)
      if (problems.length > 0) return sendProblem(reply, invalid('reward', problems))
      const row = await createReward(db, shop.id, request.body, ctx.nowUs())
      const view = rewardView(row)
      await recordAudit(
        db,
        request.operator,
        {
          action: 'reward.create',
          shopId: shop.id,
          target: String(view.id),
          detail: { name: view.name, points: view.points },
        },
        ctx.nowUs(),
      )
      return reply.code(201).send(view)
    },
  )

  app.get(
    `${base}/:id`,
    {
      onRequest: ctx.onRequest,
      schema: {
        ...doc,
        summary: 'One reward',
        operationId: 'adminGetReward',
        params: ShopRewardParams,
        response: { 200: readAnswer('The reward', RewardView), ...ADMIN_PROBLEMS(404) },
      },
    },
    async (request) => rewardView((await rewardOf(request.params)).reward),
  )

  app.patch(
    `${base}/:id`,
    {
      onRequest: ctx.onRequest,
      attachValidation: true,
      schema: {
        ...doc,
        summary: 'Change a reward: the fields sent, the others as they are',
        operationId: 'adminChangeReward',
        description: 'The reward it makes is checked as a new one is. A change that changes nothing is not audited.',
        params: ShopRewardParams,
        body: RewardPatch,
        response: { 200: readAnswer('The reward, changed', RewardView), ...ADMIN_PROBLEMS(404, 413, 415, 422) },
      },
    },
    async (request, reply) => {
      const { shop, reward } = await rewardOf(request.params)
      const tiers = await shopTiers(db, shop.id)
      const refused = commandBodyProblem(request, 'change', (body) => changedRewardProblems(reward, body, tiers))
      if (refused) return sendProblem(reply, refused)
      const problems = changedRewardProblems(reward, request.body, tiers)
      if (problems.length > 0) return sendProblem(reply, invalid('change', problems))
      const { row, changes } = await changeReward(db, reward, request.body, ctx.nowUs())
      if (Object.keys(changes).length > 0)
        await recordAudit(db, request.operator, { action: 'reward.update', shopId: shop.id, target: String(row.id), detail: { changes } }, ctx.nowUs())
      return rewardView(row)
    },
  )

  app.delete(
    `${base}/:id`,
    {
      onRequest: ctx.onRequest,
      schema: {
        ...doc,
        summary: 'Remove a reward: it is made inactive, never erased, so that past claims still name it',
        operationId: 'adminRemoveReward',
        description: 'No claim takes it from then on; its claims and codes are kept. Removing it again changes nothing and is not audited again.',
        params: ShopRewardParams,
        response: { 200: readAnswer('The reward, inactive', RewardView), ...ADMIN_PROBLEMS(404) },
      },
    },
    async (request) => {
      const { shop, reward } = await rewardOf(request.params)
      if (Number(reward.active) === 0) return rewardView(reward)
      const { row } = await changeReward(db, reward, { active: false }, ctx.nowUs())
      await recordAudit(db, request.operator, { action: 'reward.remove', shopId: shop.id, target: String(row.id), detail: { name: row.name } }, ctx.nowUs())
      return rewardView(row)
    },
  )

  app.get(
    '/v3/admin/shops/:shop/claims',
    {
      onRequest: ctx.onRequest,
      schema: {
        ...doc,
        summary: "A shop's latest claims, newest first",
        operationId: 'adminListClaims',
        params: ShopParams,
        querystring: PageQuery,
        response: { 200: readAnswer('A page of claims, newest first', AdminClaimList), ...ADMIN_PROBLEMS(404) },
      },
    },
    async (request) => {
      const shop = await shopByName(services, request.params.shop)
      const position = decodeCursor(request.query.cursor, ['string'])
      const page = await latestClaims(db, shop.id, limitOf(request.query), position === null ? null : (position[0] as string))
      return listOf(page, claimRowView, (r) => [r.id])
    },
  )

  // The codes of a pool, as JSON or as CSV (one code a line).
  await scope.register(async (csv) => {
    installCsvBody(csv, services.config.BODY_LIMIT)
    csv.withTypeProvider<TypeBoxTypeProvider>().post(
      `${base}/:id/codes`,
      {
        onRequest: ctx.onRequest,
        attachValidation: true,
        schema: {
          ...doc,
          summary: "Add codes to a reward's pool",
          operationId: 'adminAddRewardCodes',
          description:
            `\`{"codes": [...]}\`, or a CSV body (\`text/csv\`, one code a line), of 1 to ${CODES_PER_UPLOAD_MAX} codes. They are handed out in upload ` +
            'order. A code the shop has ever held, in this pool or another or handed out by a claim (generated codes too, as in a platform export), or ' +
            'repeated in the upload, is a duplicate and left out; `handed_out` counts those a claim holds.',
          params: ShopRewardParams,
          body: {
            content: {
              'application/json': { schema: CodesBody },
              'text/csv': { schema: { type: 'string', description: 'one code a line (1 to 100 printable ASCII characters without spaces, commas or quotes)' } },
            },
          } as never,
          response: { 200: readAnswer('How many codes were added, and how many were duplicates', CodesAdded), ...ADMIN_PROBLEMS(404, 413, 415, 422) },
        },
      },
      async (request, reply) => {
        const { shop, reward } = await rewardOf(request.params as { shop: string; id: string })
        const codes = typeof request.body === 'string' ? csvCodes(request.body) : jsonCodes(request)
        if ('problem' in codes) return sendProblem(reply, codes.problem)
        if (reward.codes !== 'pool')
          return sendProblem(
            reply,
            problem('invalid-body', `reward ${reward.id} makes its own codes (codes: generated); only a pool takes uploaded codes`, {
              error_count: 1,
              errors: [{ pointer: '', detail: 'must be sent to a reward whose codes come from a pool' }],
            }),
          )
        const result = (await addCodes(db, shop.id, Number(reward.id), codes.codes, ctx.nowUs()))!
        // The codes themselves stay out of the audit log: they are as good as money at the checkout.
        await recordAudit(
          db,
          request.operator,
          {
            action: 'reward.codes',
            shopId: shop.id,
            target: String(reward.id),
            detail: { added: result.added, duplicates: result.duplicates, handed_out: result.handedOut },
          },
          ctx.nowUs(),
        )
        return { added: result.added, duplicates: result.duplicates, handed_out: result.handedOut, codes_left: result.codesLeft }
      },
    )
  })
}

const invalid = (what: string, errors: { pointer: string; detail: string }[]) =>
  problem('invalid-body', `the ${what} has ${errors.length} invalid field${errors.length === 1 ? '' : 's'}`, { error_count: errors.length, errors })

/** The codes of a JSON body, or its problem. */
function jsonCodes(request: Parameters<typeof commandBodyProblem>[0]): { codes: string[] } | { problem: ReturnType<typeof problem> } {
  const refused = commandBodyProblem(request, 'upload')
  if (refused) return { problem: refused }
  return { codes: (request.body as { codes: string[] }).codes }
}

/** The codes of a CSV body, one a line, or its problem. */
function csvCodes(text: string): { codes: string[] } | { problem: ReturnType<typeof problem> } {
  const read = readCodes(text)
  if ('codes' in read) return read
  const where = read.line === 0 ? '' : `/${read.line}`
  return { problem: invalid('upload', [{ pointer: where, detail: `${read.line === 0 ? 'the codes' : `line ${read.line}`}: ${read.detail}` }]) }
}
