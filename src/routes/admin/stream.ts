import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import type { Kysely } from 'kysely'
import type { Clock } from '../../clock.ts'
import { ADMIN_PROBLEMS, StreamQuery } from '../../schemas/admin.ts'
import { eventsSince, type EventListRow } from '../../repos/admin-events-repo.ts'
import { shopNames } from '../../repos/admin-read-repo.ts'
import type { Tables } from '../../db/tables.ts'
import { eventItem } from './events.ts'
import { shopByName } from '../../http/intake/index.ts'
import { ADMIN_SECURITY, TAGS, type AdminContext } from './common.ts'

// The live tail: Server-Sent Events, one `event` message per stored webhook. One poller per
// process reads the events table by receive time every ADMIN_STREAM_POLL_MS while anyone
// listens, so webhooks stored by other processes on the same database show too. It looks back
// LOOK_BACK_US each time, because a webhook is committed after it was received (and on PostgreSQL
// lanes and processes commit out of order): a webhook committed more than that after its arrival
// (a queue that long) is not shown.

const LOOK_BACK_US = 3_000_000
const MAX_ROWS = 5_000
const HEARTBEAT_MS = 15_000

interface Listener {
  shopId: number | undefined
  fromUs: number
  send(row: EventListRow, shops: ReadonlyMap<number, string>): void
}

class EventTail {
  private readonly listeners = new Set<Listener>()
  private timer: NodeJS.Timeout | undefined
  private readonly seen = new Map<string, number>()
  private afterUs = 0
  private running = false

  constructor(
    private readonly db: Kysely<Tables>,
    private readonly pollMs: number,
    private readonly onError: (err: unknown) => void,
    /** Its stampUs: the timeline of stored webhooks' receive times. */
    private readonly clock: Clock,
  ) {}

  listen(listener: Listener): () => void {
    if (this.listeners.size === 0) {
      this.seen.clear()
      this.afterUs = listener.fromUs - LOOK_BACK_US
      this.timer = setInterval(() => void this.poll(), this.pollMs)
    }
    this.listeners.add(listener)
    return () => {
      this.listeners.delete(listener)
      if (this.listeners.size === 0) this.stop()
    }
  }

  stop(): void {
    clearInterval(this.timer)
    this.timer = undefined
  }

  private async poll(): Promise<void> {
    if (this.running) return
    this.running = true
    try {
      const rows = await eventsSince(this.db, this.afterUs, MAX_ROWS)
      const fresh = rows.filter((r) => !this.seen.has(r.id))
      if (fresh.length > 0) {
        const shops = await shopNames(this.db)
        for (const row of fresh) {
          this.seen.set(row.id, row.receivedUs)
          for (const l of this.listeners) if ((l.shopId === undefined || l.shopId === row.shopId) && row.receivedUs >= l.fromUs) l.send(row, shops)
        }
      }
      const newest = rows.length > 0 ? rows[rows.length - 1]!.receivedUs : this.afterUs + LOOK_BACK_US
      // A full page moves on from its last row; otherwise the next look goes back LOOK_BACK_US.
      this.afterUs = rows.length === MAX_ROWS ? newest - 1 : Math.max(this.afterUs, Math.min(newest, this.clock.stampUs()) - LOOK_BACK_US)
      for (const [id, us] of this.seen) if (us <= this.afterUs) this.seen.delete(id)
    } catch (err) {
      this.onError(err)
    } finally {
      this.running = false
    }
  }
}

export async function streamRoutes(scope: FastifyInstance, ctx: AdminContext): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>()
  const { services } = ctx
  const tail = new EventTail(
    services.backend.db,
    services.config.ADMIN_STREAM_POLL_MS,
    (err) => app.log.warn({ err }, 'the event stream could not read the events; it tries again'),
    services.clock,
  )
  const open = new Set<() => void>()
  // Open streams would hold the server open: they end when it closes.
  scope.addHook('preClose', async () => {
    for (const end of [...open]) end()
    tail.stop()
  })

  app.get(
    '/v3/admin/events/stream',
    {
      // A HEAD would hold an endless answer with no body open: the stream is GET only.
      exposeHeadRoute: false,
      onRequest: ctx.onRequest,
      schema: {
        summary: 'Stored webhooks as they are committed (Server-Sent Events)',
        operationId: 'adminEventStream',
        tags: TAGS,
        security: ADMIN_SECURITY,
        description:
          'Each stored webhook is one message `event: event` whose `data` is the event as `GET /v3/admin/events` lists it (schema AdminEvent), ' +
          'within a second of its commit. Comments (lines starting with a colon) keep the connection alive.',
        querystring: StreamQuery,
        response: {
          200: {
            description: 'An endless text/event-stream',
            content: { 'text/event-stream': { schema: { type: 'string', description: 'event: event / data: an AdminEvent as JSON' } } },
          },
          ...ADMIN_PROBLEMS(404),
        },
      },
    },
    async (request, reply) => {
      const shop = request.query.shop === undefined ? undefined : await shopByName(services, request.query.shop)
      reply.hijack()
      const res = reply.raw
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      })
      res.write(': stream of stored webhooks\nretry: 2000\n\n')
      const stopListening = tail.listen({
        shopId: shop?.id,
        fromUs: services.clock.stampUs(),
        send: (row, shops) => res.write(`event: event\nid: ${row.id}\ndata: ${JSON.stringify(eventItem(row, shops))}\n\n`),
      })
      const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), HEARTBEAT_MS)
      const end = () => {
        clearInterval(heartbeat)
        stopListening()
        open.delete(end)
        if (!res.writableEnded) res.end()
      }
      open.add(end)
      request.raw.once('close', end)
      res.once('close', end)
    },
  )
}
