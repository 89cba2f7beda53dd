import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { problem, readBalanceFile, sendProblem, shopByName, submit } from '../../http/intake/index.ts'
import { addToSummary, emptySummary, IMPORT_UNIT, importBalances, importCommands } from '../../rewards/balance-import.ts'
import { shopTiers } from '../../rewards/catalogue.ts'
import { ADMIN_PROBLEMS, ShopParams } from '../../schemas/admin.ts'
import { ImportQuery, ImportSummary } from '../../schemas/imports.ts'
import { recordAudit } from '../../repos/admin-repo.ts'
import { installCsvBody } from '../../http/csv-body.ts'
import { readAnswer } from '../resources.ts'
import { ADMIN_SECURITY, TAGS, type AdminContext } from './common.ts'

// Switching in over the admin API (README, Switching in): the same CSV as `points import`, read and
// checked whole, then handed to the writer a unit at a time as `import` commands, each decided under
// its customer's lock. Files larger than BODY_LIMIT go through the command line.

export async function importRoutes(scope: FastifyInstance, ctx: AdminContext): Promise<void> {
  const { services } = ctx
  const { db } = services.backend
  await scope.register(async (csv) => {
    installCsvBody(csv, services.config.BODY_LIMIT)
    csv.withTypeProvider<TypeBoxTypeProvider>().post(
      '/v3/admin/shops/:shop/points/imports',
      {
        onRequest: ctx.onRequest,
        schema: {
          tags: TAGS,
          security: ADMIN_SECURITY,
          summary: 'Import balances from another platform (CSV)',
          operationId: 'adminImportPoints',
          description:
            'A CSV (text/csv) whose header names customer_id, email and points (and optionally expires_at and tier), one line per ' +
            "customer. A customer the shop does not know is made from the line. Each line's `import` entries are brought to its points: importing the " +
            'same file again changes nothing, and a corrected file writes only the differences. expires_at (an ISO 8601 instant with its offset; empty: ' +
            "the shop's rule) is when the line's points expire; one already passed imports them and expires them at once. A bad line refuses the whole file (422, each problem at " +
            '`/<line>/<column>`) and nothing is written. With dry_run=true, says what it would change and writes nothing.',
          params: ShopParams,
          querystring: ImportQuery,
          body: { content: { 'text/csv': { schema: { type: 'string', description: 'the CSV of balances' } } } } as never,
          response: { 200: readAnswer('What the import changed (or would change)', ImportSummary), ...ADMIN_PROBLEMS(404, 413, 415, 422) },
        },
      },
      async (request, reply) => {
        const shop = await shopByName(services, request.params.shop)
        if (typeof request.body !== 'string') return sendProblem(reply, problem('unsupported-media-type', 'send the balances as text/csv'))
        const read = readBalanceFile(request.body, await shopTiers(db, shop.id))
        if ('problems' in read)
          return sendProblem(
            reply,
            problem('invalid-body', `the file has ${read.count} problem${read.count === 1 ? '' : 's'}; nothing was imported`, {
              error_count: read.count,
              errors: read.problems,
            }),
          )
        const dryRun = request.query.dry_run === 'true'
        if (dryRun) return importBalances(services.backend, shop.id, read.lines, { dryRun, clock: services.clock })
        const summary = emptySummary(false)
        // A unit at a time, so that a large file never fills the write queue; a 503 midway leaves what
        // was committed, and sending the file again writes only the rest.
        for (let i = 0; i < read.lines.length; i += IMPORT_UNIT) {
          const commands = importCommands(shop.id, read.lines.slice(i, i + IMPORT_UNIT), ctx.nowUs())
          addToSummary(summary, await Promise.all(commands.map((c) => submit(services, c, 'import line'))))
        }
        await recordAudit(
          db,
          request.operator,
          { action: 'points.import', shopId: shop.id, target: null, detail: { ...summary, dry_run: undefined } },
          ctx.nowUs(),
        )
        return summary
      },
    )
  })
}
