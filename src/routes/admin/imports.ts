import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { problem, readBalanceFile, sendProblem, shopByName, submit } from '../../http/intake/index.ts'
import {
  addToSummary,
  checkIdentities,
  emptySummary,
  fileSha256,
  IMPORT_UNIT,
  importBalances,
  importCommands,
  importRunView,
  recordProgress,
} from '../../rewards/balance-import.ts'
import { shopTiers } from '../../rewards/catalogue.ts'
import { ADMIN_PROBLEMS, ShopParams } from '../../schemas/admin.ts'
import { ImportQuery, ImportRunList, ImportSummary, TO_FINISH } from '../../schemas/imports.ts'
import { recordAudit } from '../../repos/admin-repo.ts'
import { finishImportRun, startImportRun, unfinishedImportRuns } from '../../repos/import-repo.ts'
import { installCsvBody } from '../../http/csv-body.ts'
import { readAnswer } from '../resources.ts'
import { ADMIN_SECURITY, TAGS, type AdminContext } from './common.ts'

// Switching in over the admin API (docs/program/imports.md): the same CSV as `points import`, read and
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
            '`/<line>/<column>`) and nothing is written. A line whose customer_id is a customer known with another e-mail, or whose new customer_id ' +
            'comes with an e-mail a customer holds, refuses the file too (at `/<line>/email`), unless on_mismatch says which side wins. ' +
            'With dry_run=true, says what it would change and writes nothing. An import is recorded as it starts and finished at its end: ' +
            `one stopped midway is listed by GET on this path until the same file is imported again ("${TO_FINISH}").`,
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
        const checked = await checkIdentities(services.backend, shop.id, read.lines, request.query.on_mismatch)
        if ('problems' in checked)
          return sendProblem(
            reply,
            problem(
              'invalid-body',
              `the file has ${checked.count} line${checked.count === 1 ? '' : 's'} whose customer_id and e-mail disagree with the shop's customers; nothing was imported: ` +
                'on_mismatch=take-file imports them as written, on_mismatch=keep-stored leaves them out',
              { error_count: checked.count, errors: checked.problems },
            ),
          )
        const { lines, mismatched } = checked
        const dryRun = request.query.dry_run === 'true'
        const finish = (summary: ReturnType<typeof emptySummary>) => ({ ...summary, lines: read.lines.length, mismatched })
        if (dryRun) return finish(await importBalances(services.backend, shop.id, lines, { dryRun, clock: services.clock }))
        const run = await startImportRun(db, {
          shopId: shop.id,
          fileSha256: fileSha256(request.body),
          linesTotal: lines.length,
          startedBy: request.operator.name,
          atUs: ctx.nowUs(),
        })
        const done = emptySummary(false)
        // A unit at a time, so that a large file never fills the write queue; a 503 midway leaves what
        // was committed, and the import unfinished: sending the file again writes only the rest.
        for (let i = 0; i < lines.length; i += IMPORT_UNIT) {
          const commands = importCommands(shop.id, lines.slice(i, i + IMPORT_UNIT), ctx.nowUs())
          addToSummary(done, await Promise.all(commands.map((c) => submit(services, c, 'import line'))))
          await recordProgress(services.backend, run, done.lines, ctx.nowUs())
        }
        await finishImportRun(db, run.id, lines.length, ctx.nowUs())
        const summary = finish(done)
        await recordAudit(
          db,
          request.operator,
          {
            action: 'points.import',
            shopId: shop.id,
            target: null,
            detail: { ...summary, dry_run: undefined, on_mismatch: request.query.on_mismatch ?? null },
          },
          ctx.nowUs(),
        )
        return summary
      },
    )
  })

  scope.withTypeProvider<TypeBoxTypeProvider>().get(
    '/v3/admin/shops/:shop/points/imports',
    {
      onRequest: ctx.onRequest,
      schema: {
        tags: TAGS,
        security: ADMIN_SECURITY,
        summary: 'Points imports not finished',
        operationId: 'adminUnfinishedImports',
        description:
          "The shop's points imports recorded as started and not finished, oldest first: killed midway, stopped by an outage or a 503, or still " +
          `running. Each says how far it got (lines_done of lines_total, committed in the file's order) and "${TO_FINISH}": importing the same ` +
          'file (the same bytes, file_sha256) writes only what is missing and finishes that import.',
        params: ShopParams,
        response: { 200: readAnswer("The shop's unfinished imports", ImportRunList), ...ADMIN_PROBLEMS(404) },
      },
    },
    async (request) => {
      const shop = await shopByName(services, request.params.shop)
      return { unfinished: (await unfinishedImportRuns(db, shop.id)).map(importRunView) }
    },
  )
}
