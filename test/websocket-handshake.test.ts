// Seed 000 §1 and §7: the upgrade, its refusals (HTTP status + the REST error body), the
// Origin check, the connection cap, and the card's advertisement of the binding.
import t from 'tap'
import { WEBSOCKET_BINDING_URI } from '../lib/index.js'
import { startServer } from './helpers/server.js'
import { connect, rawUpgrade, refusedUpgrade, wsUrl } from './helpers/ws.js'

t.test('101 Switching Protocols; no subprotocol selected when none is offered', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  const { socket, response } = await rawUpgrade(server.origin, ['A2A-Version: 1.0'])
  t.match(response, /^HTTP\/1\.1 101 Switching Protocols\r\n/)
  t.notMatch(response.toLowerCase(), /sec-websocket-protocol/)
  socket.destroy()
  const offered = await rawUpgrade(server.origin, ['A2A-Version: 1.0', 'Sec-WebSocket-Protocol: unknown.v9'])
  t.notMatch(offered.response.toLowerCase(), /sec-websocket-protocol/, 'an unknown offered subprotocol is not selected')
  offered.socket.destroy()
})

t.test('the card lists the binding with a ws:// URL at the root path, after JSON-RPC', async t => {
  const server = await startServer({ prefix: '/agent' })
  t.teardown(() => server.close())
  const card = await (await fetch(`${server.origin}/.well-known/agent-card.json`)).json()
  const entry = card.supportedInterfaces.find((i: any) => i.protocolBinding === WEBSOCKET_BINDING_URI)
  t.same(entry, { url: `${server.origin.replace('http', 'ws')}/agent`, protocolBinding: 'https://a2a-rust.com/bindings/websocket/v1', protocolVersion: '1.0' })
  t.equal(card.supportedInterfaces[0].protocolBinding, 'JSONRPC')
  const client = await connect(wsUrl(server.origin, '/agent'))
  t.equal((await client.request('GetTask', { id: 'x' })).error.code, -32001, 'GET upgrades where POST is JSON-RPC')
  client.close()
})

t.test('a missing A2A-Version → 400 FAILED_PRECONDITION with VERSION_NOT_SUPPORTED', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  const missing = await refusedUpgrade(wsUrl(server.origin, '/', ''))
  t.equal(missing.status, 400)
  t.match(missing.headers['content-type'], /^application\/a2a\+json/)
  t.same(missing.body, {
    error: {
      code: 400,
      status: 'FAILED_PRECONDITION',
      message: 'A2A version 0.3 (no A2A-Version was sent) is not supported; supported versions: 1.0',
      details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'VERSION_NOT_SUPPORTED', domain: 'a2a-protocol.org', metadata: { requestedVersion: '0.3', supportedVersions: '1.0' } }]
    }
  })
  const unsupported = await refusedUpgrade(wsUrl(server.origin, '/', '?A2A-Version=0.3'))
  t.equal(unsupported.body.error.details[0].metadata.requestedVersion, '0.3')
  const headerWins = await refusedUpgrade(wsUrl(server.origin, '/', '?A2A-Version=1.0'), { headers: { 'A2A-Version': '2.0' } })
  t.equal(headerWins.status, 400, 'the header wins over the query parameter')
  const byHeader = await connect(wsUrl(server.origin, '/', ''), { headers: { 'A2A-Version': '1.0' } })
  byHeader.close()
})

t.test('allowMissingVersion accepts an upgrade without a version as 1.0', async t => {
  const server = await startServer({ allowMissingVersion: true })
  t.teardown(() => server.close())
  const client = await connect(wsUrl(server.origin, '/', ''))
  t.equal((await client.request('GetTask', { id: 'x' })).error.code, -32001)
  client.close()
})

t.test('allowedOrigins: compared whole ignoring case; others 403 PERMISSION_DENIED without details', async t => {
  const server = await startServer({ websocket: { allowedOrigins: ['https://App.example.com'] } })
  t.teardown(() => server.close())
  const ok = await connect(wsUrl(server.origin), { headers: { Origin: 'https://app.EXAMPLE.com' } })
  ok.close()
  const refused = await refusedUpgrade(wsUrl(server.origin), { headers: { Origin: 'https://app.example.com.evil.test' } })
  t.equal(refused.status, 403)
  t.same(refused.body, { error: { code: 403, status: 'PERMISSION_DENIED', message: 'Origin https://app.example.com.evil.test is not allowed' } })
  const noOrigin = await connect(wsUrl(server.origin))
  noOrigin.close()
  t.pass('an upgrade without Origin is accepted unless requireOrigin is set')
})

t.test('requireOrigin refuses an upgrade without Origin', async t => {
  const server = await startServer({ websocket: { allowedOrigins: ['https://app.example.com'], requireOrigin: true } })
  t.teardown(() => server.close())
  const refused = await refusedUpgrade(wsUrl(server.origin))
  t.same(refused.body, { error: { code: 403, status: 'PERMISSION_DENIED', message: 'Origin (none) is not allowed' } })
  const ok = await connect(wsUrl(server.origin), { headers: { Origin: 'https://app.example.com' } })
  ok.close()
})

t.test('maxConnections: an upgrade past it → 503 UNAVAILABLE; a freed slot is reused', async t => {
  const server = await startServer({ websocket: { maxConnections: 2 } })
  t.teardown(() => server.close())
  const one = await connect(wsUrl(server.origin))
  const two = await connect(wsUrl(server.origin))
  const refused = await refusedUpgrade(wsUrl(server.origin))
  t.equal(refused.status, 503)
  t.same(refused.body, { error: { code: 503, status: 'UNAVAILABLE', message: 'Service unavailable: 2 WebSocket connections are open' } })
  one.close()
  await one.closed
  await new Promise(resolve => setTimeout(resolve, 50))
  const three = await connect(wsUrl(server.origin))
  t.equal((await three.request('GetTask', { id: 'x' })).error.code, -32001)
  two.close()
  three.close()
})

t.test('an HTTP request to the upgrade path without Upgrade is not a WebSocket', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  t.equal((await fetch(`${server.origin}/?A2A-Version=1.0`)).status, 404)
})
