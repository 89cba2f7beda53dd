// The ceiling: a bare Fastify route doing only what every webhook must —
// parse Basic auth, hash the key and look it up, parse the JSON body.
import { createHash } from 'node:crypto'
import basicAuth from 'basic-auth'
import Fastify from 'fastify'

const keyHash = createHash('sha256')
  .update(process.env.BENCH_KEY ?? '')
  .digest('hex')
const keys = new Map([[keyHash, { shopId: 1 }]])
const app = Fastify({ logger: false })

app.get('/healthz', async () => ({ status: 'ok' }))
app.post('/v3/hook/radix/vanilla/:resource/:hook', async (request, reply) => {
  const credentials = basicAuth.parse(request.headers.authorization ?? '')
  const shop = credentials && keys.get(createHash('sha256').update(credentials.pass).digest('hex'))
  if (!shop) return reply.code(401).send({ status: 401 })
  return { event_id: 'x', status: 'applied', id: (request.body as { id: number }).id }
})

const address = await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' })
process.stdout.write(`listening ${address}\n`)
