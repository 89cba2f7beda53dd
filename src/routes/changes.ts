import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import type { Services } from '../services.ts'
import { noStore } from '../http/no-store.ts'
import { badRequest, unavailable } from '../http/intake/index.ts'
import { ChangeList, ChangesQuery } from '../schemas/changes.ts'
import { changesAfter, changeView } from '../repos/changes-repo.ts'
import { READ_PROBLEMS, readAnswer } from './resources.ts'

const MAX_LIMIT = 500
const MAX_WAIT_SECONDS = 30

/** GET /v3/changes: the shop's change feed after a position, in commit order, with an optional long poll. */
export async function changeRoutes(scope: FastifyInstance, services: Services): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>()
  const { backend, auth, feed, config, clock } = services

  app.get(
    '/v3/changes',
    {
      onRequest: [noStore, auth.hook],
      schema: {
        summary: "The shop's change feed after a position, in commit order",
        operationId: 'listChanges',
        description:
          'Entries of every change the service committed for the shop: `customer.updated`, `customer.deleted`, `order.updated`, ' +
          '`points.changed` (one per ledger entry), `tier.changed` (a VIP tier won or lost), `points.expiring` (a warning ahead of an ' +
          'expiry, once per customer, date and lead time), `tier.expiring` (a warning ahead of a fall by time alone) and `reward.available` ' +
          '(the balance reached a reward the customer may claim), besides the rewards and referrals entries. Pass the last `position` seen (or `next_after`) as `after`: pages never skip an ' +
          'entry nor repeat one, however many processes commit at once. With `wait`, an empty page is answered only after that many ' +
          'seconds pass with no new entry.',
        tags: ['read'],
        security: [{ basic: [] }],
        querystring: ChangesQuery,
        response: { 200: readAnswer('A page of changes, oldest first', ChangeList), ...READ_PROBLEMS() },
      },
    },
    async (request, reply) => {
      const shopId = request.principal.shopId
      const after = Number(request.query.after ?? 0)
      const limit = Number(request.query.limit ?? 100)
      const wait = Number(request.query.wait ?? 0)
      if (limit > MAX_LIMIT) throw badRequest(`limit must be at most ${MAX_LIMIT}`)
      if (wait > MAX_WAIT_SECONDS) throw badRequest(`wait must be at most ${MAX_WAIT_SECONDS} seconds`)
      if (!Number.isSafeInteger(after)) throw badRequest('after must be a position returned by this endpoint')
      const deadline = clock.monotonicMs() + wait * 1000
      const gone = new AbortController()
      reply.raw.once('close', () => gone.abort())
      // A read that the shutdown cut short (its pool closed under it) is the shutdown's 503, not a 500.
      const read = () =>
        changesAfter(backend.db, shopId, after, limit).catch((err: unknown) => {
          if (feed.watch.isClosed) throw unavailable(config.RETRY_AFTER_SECONDS, 'the service is shutting down; retry after the delay in Retry-After')
          throw err
        })
      let seen = feed.watch.generation
      let changes = await read()
      while (changes.length === 0 && !gone.signal.aborted && !feed.watch.isClosed && clock.monotonicMs() < deadline) {
        await feed.watch.next(deadline - clock.monotonicMs(), seen, gone.signal)
        // Shutting down: answer with what was read, rather than query a database being closed.
        if (feed.watch.isClosed) break
        seen = feed.watch.generation
        changes = await read()
      }
      return { changes: changes.map(changeView), next_after: changes.length === 0 ? after : Number(changes[changes.length - 1]!.position) }
    },
  )
}
