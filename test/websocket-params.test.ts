// Seed 000 §2: service parameters are the upgrade request's headers, captured once per
// connection, with the value rules of the HTTP bindings. The header rules need header
// lines a client library would not send, so the upgrade is written by hand.
import t from 'tap'
import { startServer, userMessage } from './helpers/server.js'
import { clientFrame, connect, frameReader, rawUpgrade, wsUrl } from './helpers/ws.js'

const server = await startServer()
t.teardown(() => server.close())

/** Opens a hand-written upgrade, sends `params` and returns the service parameters the executor saw. */
async function paramsSeen (headerLines: string[], path = '/?A2A-Version=1.0') {
  const { socket, response, rest } = await rawUpgrade(server.origin, headerLines, path)
  t.match(response, /^HTTP\/1\.1 101 /)
  const reader = frameReader(socket, rest)
  socket.write(clientFrame(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: userMessage('params') } })))
  const frame = JSON.parse((await reader.next()).payload.toString())
  socket.destroy()
  return frame.result.task.artifacts[0].parts[0].data
}

t.test('names lowercased; a value that is not visible ASCII is left out (UTF-8 included)', async t => {
  const params = await paramsSeen(['X-Mixed-Case: Value', Buffer.from('X-Name: café').toString('latin1'), 'X-Tab: a\tb'])
  t.equal(params['x-mixed-case'], 'Value')
  t.equal(params['x-tab'], 'a\tb')
  t.notOk('x-name' in params, 'X-Name: café is not seen')
})

t.test('a header on several lines is one parameter joined with ", "; Cookie with "; "', async t => {
  const params = await paramsSeen(['X-Multi: one', 'X-Multi: two', 'x-multi: three', 'Cookie: a=1', 'Cookie: b=2'])
  t.equal(params['x-multi'], 'one, two, three')
  t.equal(params.cookie, 'a=1; b=2')
})

t.test('Last-Event-ID is dropped', async t => {
  const params = await paramsSeen(['Last-Event-ID: 42', 'X-Kept: yes'])
  t.notOk('last-event-id' in params)
  t.equal(params['x-kept'], 'yes')
})

t.test('the version from the query string is a parameter; a header wins', async t => {
  t.equal((await paramsSeen([]))['a2a-version'], '1.0')
  t.equal((await paramsSeen(['A2A-Version: 1.0.1'], '/?A2A-Version=1.0'))['a2a-version'], '1.0.1')
})

t.test('reserved names start with a colon: the path and a connection id', async t => {
  const params = await paramsSeen([], '/?A2A-Version=1.0&x=1')
  t.equal(params[':path'], '/')
  t.match(params[':connection-id'], /^[0-9a-f-]{36}$/)
  t.ok(Object.keys(params).filter(name => name.startsWith(':')).every(name => [':path', ':connection-id'].includes(name)))
})

t.test('captured once: every call on a connection sees the same parameters; another connection has its own id', async t => {
  const one = await connect(wsUrl(server.origin), { headers: { 'X-Client': 'one' } })
  const two = await connect(wsUrl(server.origin), { headers: { 'X-Client': 'two' } })
  const seen = async (client: typeof one) => (await client.request('SendMessage', { message: userMessage('params') })).result.task.artifacts[0].parts[0].data
  const [a, b, c] = [await seen(one), await seen(one), await seen(two)]
  t.same(a, b)
  t.equal(a['x-client'], 'one')
  t.equal(c['x-client'], 'two')
  t.not(a[':connection-id'], c[':connection-id'])
  one.close()
  two.close()
})
