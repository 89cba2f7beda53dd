import type { IncomingMessage, Server } from 'node:http'
import type { FastifyInstance } from 'fastify'
import { declaredBodyBytes } from './body-budget.ts'
import { problem, sendProblem } from './problem.ts'

// Node answers `Expect: 100-continue` by itself, before anything has looked at
// the request, and answers any other expectation with an empty 417. Both events
// are taken over here: the 100 is sent just before the body is read, which is
// after the key has been checked (onRequest) and the body has found room in
// the budget (the body budget's preParsing hook, added before this one), so a
// sender with a bad key or a full server never uploads its body.

const awaitsContinue = new WeakSet<IncomingMessage>()

const CONTINUE = /^\s*100-continue\s*$/i

export function installExpectContinue(app: FastifyInstance, bodyLimit: number): void {
  const server = app.server as Server
  server.on('checkContinue', (req, res) => {
    awaitsContinue.add(req)
    server.emit('request', req, res)
  })
  server.on('checkExpectation', (req, res) => server.emit('request', req, res))

  app.addHook('onRequest', (request, reply, done) => {
    const expect = request.headers.expect
    // HTTP/1.0 senders may not expect anything (RFC 9110, 10.1.1): the field is ignored.
    if (expect === undefined || request.raw.httpVersion !== '1.1' || CONTINUE.test(expect)) return done()
    reply.header('connection', 'close')
    sendProblem(reply, problem('expectation-failed', 'the only expectation this service meets is Expect: 100-continue'))
  })

  app.addHook('preParsing', (request, reply, payload, done) => {
    if (awaitsContinue.delete(request.raw) && declaredBodyBytes(request, bodyLimit) > 0) reply.raw.writeContinue()
    done(null, payload)
  })

  // Answered without a 100: the sender may still be holding its body back, or
  // sending it; either way the connection cannot carry another request.
  app.addHook('onSend', (request, reply, payload, done) => {
    if (awaitsContinue.has(request.raw)) reply.header('connection', 'close')
    done(null, payload)
  })
}
