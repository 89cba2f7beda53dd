import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, test } from 'node:test'
import { guardedAgents, lookupWith, type HostResolver } from './endpoint-guard.ts'
import { postWebhook } from './webhook-post.ts'

// One POST through the guard's agent, to a real server on the loopback: a host name is resolved
// as Node asks (a list, for family auto-selection) and delivered to, and every address inside is
// refused before connecting, whether a lookup gave it or the URL names it.

let server: http.Server
let port = 0
let requests = 0

before(async () => {
  server = http.createServer((req, res) => {
    requests++
    req.resume().on('end', () => res.writeHead(204).end())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  port = (server.address() as AddressInfo).port
})
after(() => new Promise<void>((resolve) => server.close(() => resolve())))

const names: HostResolver = async (host) => {
  if (host === 'hooks.test') return [{ address: '127.0.0.1', family: 4 }]
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' })
}

async function post(url: string, allowPrivate: boolean) {
  const agents = guardedAgents(allowPrivate)
  try {
    return await postWebhook(url, {}, '{}', { timeoutMs: 5000, agents, lookup: lookupWith(names) })
  } finally {
    agents.http.destroy()
    agents.https.destroy()
  }
}

test('allowed private addresses: a host name is delivered to, as an address is', async () => {
  const before = requests
  assert.deepEqual(await post(`http://hooks.test:${port}/x`, true), { ok: true, status: 204 })
  assert.deepEqual(await post(`http://127.0.0.1:${port}/x`, true), { ok: true, status: 204 })
  assert.equal(requests, before + 2)
})

test('refused private addresses: a name that resolves inside, and loopback literals in any form, are refused before connecting', async () => {
  const before = requests
  const named = await post(`http://hooks.test:${port}/x`, false)
  assert.deepEqual(named, {
    ok: false,
    status: null,
    error: 'hooks.test resolves to 127.0.0.1, which is not a public address: refused at delivery (SUBSCRIPTIONS_ALLOW_PRIVATE=1 allows it)',
  })
  for (const literal of ['127.0.0.1', '[::ffff:127.0.0.1]', '[::127.0.0.1]', '[::1]', '0.0.0.0']) {
    const refused = await post(`http://${literal}:${port}/x`, false)
    assert.equal(refused.ok, false, literal)
    assert.match((refused as { error: string }).error, /is not a public address: refused at delivery/, literal)
  }
  assert.equal(requests, before, 'no request reached the server')
})

test('a name that does not resolve is said so', async () => {
  const answer = await post(`http://nowhere.test:${port}/x`, true)
  assert.deepEqual(answer, { ok: false, status: null, error: 'the host does not resolve' })
})

test('the deadline covers the whole exchange: an answer whose body trickles is cut at timeoutMs, not when the body ends', async () => {
  const trickle = http.createServer((req, res) => {
    req.resume().on('end', () => {
      res.writeHead(200, { 'content-length': '1000' })
      const timer = setInterval(() => res.write('x'), 50)
      res.on('close', () => clearInterval(timer))
    })
  })
  await new Promise<void>((resolve) => trickle.listen(0, '127.0.0.1', resolve))
  const agents = guardedAgents(true)
  try {
    const started = Date.now()
    const answer = await postWebhook(`http://hooks.test:${(trickle.address() as AddressInfo).port}/x`, {}, '{}', {
      timeoutMs: 300,
      agents,
      lookup: lookupWith(names),
    })
    assert.deepEqual(answer, { ok: false, status: null, error: 'no answer within 300 ms' })
    // The body would take 50 s; generous for a loaded machine.
    assert.ok(Date.now() - started < 10_000)
  } finally {
    agents.http.destroy()
    trickle.closeAllConnections()
    await new Promise<void>((resolve) => trickle.close(() => resolve()))
  }
})

test("a 429's Retry-After and the start of its body are kept for the caller; the caller's content type is sent", async () => {
  const got: string[] = []
  const throttling = http.createServer((req, res) => {
    got.push(String(req.headers['content-type']))
    req.resume().on('end', () => res.writeHead(429, { 'retry-after': '7' }).end(`{"errors":[{"code":"throttled"}]}${'x'.repeat(10_000)}`))
  })
  await new Promise<void>((resolve) => throttling.listen(0, '127.0.0.1', resolve))
  const agents = guardedAgents(true)
  try {
    const answer = await postWebhook(`http://127.0.0.1:${(throttling.address() as AddressInfo).port}/x`, { 'content-type': 'application/vnd.api+json' }, '{}', {
      timeoutMs: 5000,
      agents,
    })
    assert.equal(answer.ok, false)
    assert.equal(answer.status, 429)
    assert.equal(answer.retryAfter, '7')
    assert.equal(answer.answer!.length, 4096, 'the first 4 KiB')
    assert.ok(answer.answer!.startsWith('{"errors":[{"code":"throttled"}]}'))
    assert.deepEqual(got, ['application/vnd.api+json'])
  } finally {
    agents.http.destroy()
    throttling.closeAllConnections()
    await new Promise<void>((resolve) => throttling.close(() => resolve()))
  }
})
