// Seed 000 §2: service parameters are the upgrade request's headers, captured once per
// connection, with the value rules of the HTTP bindings. The header rules need header
// lines a client library would not send, so the upgrade is written by hand.
import t from 'tap'
import { conformanceCard } from '../examples/agent.js'
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

t.test('no other parameter has a query-string fallback: x, A2A-Extensions and Authorization in the query are not seen', async t => {
  const params = await paramsSeen([], '/?A2A-Version=1.0&x=1&A2A-Extensions=https%3A%2F%2Fexample.com%2Fext%2Fa%2Fv1&Authorization=Bearer%20t&a2a-extensions=y&authorization=z')
  t.same(Object.keys(params).sort(), [':connection-id', ':path', 'a2a-version', 'connection', 'host', 'sec-websocket-key', 'sec-websocket-version', 'upgrade'],
    'the upgrade\'s headers, the version from the query and the reserved names: nothing else')
  t.equal(params['a2a-version'], '1.0')
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

t.test('A2A-Extensions is an upgrade header: a required extension is enforced per call, and the query string is no fallback', async t => {
  const ext = 'https://example.com/ext/a/v1'
  const required = 'https://example.com/ext/required/v1'
  const withExtensions = await startServer({
    card: { ...conformanceCard, capabilities: { ...conformanceCard.capabilities, extensions: [{ uri: ext }, { uri: required, required: true }] } },
    executor: {
      async execute (context, events) {
        await events.artifact({ artifactId: 'extensions', parts: [{ data: { extensions: context.extensions } }] })
        await events.completed()
      }
    }
  })
  t.teardown(() => withExtensions.close())
  const refusal = (id: string) => ({
    jsonrpc: '2.0',
    id,
    error: {
      code: -32008,
      message: `Extension support required: ${required}`,
      data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'EXTENSION_SUPPORT_REQUIRED', domain: 'a2a-protocol.org', metadata: { extension: required } }]
    }
  })

  const without = await connect(wsUrl(withExtensions.origin))
  t.same(await without.request('SendMessage', { message: userMessage('x') }, 'without'), refusal('without'), 'no A2A-Extensions on the upgrade: -32008')
  without.close()

  const asked = await connect(wsUrl(withExtensions.origin), { headers: { 'A2A-Extensions': `${ext}, https://unknown.example/x,${required}` } })
  const served = await asked.request('SendMessage', { message: userMessage('x') }, 'asked')
  t.equal(served.result?.task.status.state, 'TASK_STATE_COMPLETED', 'served')
  t.same(served.result?.task.artifacts[0].parts[0].data, { extensions: [ext, required] }, 'the executor sees the supported extensions asked for')
  asked.close()

  const inQuery = await connect(wsUrl(withExtensions.origin, '/', `?A2A-Version=1.0&A2A-Extensions=${encodeURIComponent(required)}`))
  t.same(await inQuery.request('SendMessage', { message: userMessage('x') }, 'query'), refusal('query'), 'the same URI in the query string: still -32008')
  inQuery.close()
})
