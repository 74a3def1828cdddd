// Seed 001, service parameters: a request's `serviceParams` (a flat map of strings) go
// over the upgrade's headers for that call only, under the header value rules; the
// version is read per request, falling back to the upgrade's header or query parameter.
import t from 'tap'
import { startServer, userMessage } from './helpers/server.js'
import { connectV1, v1Url, type V1Client } from './helpers/ws-a2a-v1.js'

const server = await startServer()
t.teardown(() => server.close())

/** The service parameters the executor saw for one call (the conformance agent's `params`). */
async function paramsSeen (client: V1Client, id: string, serviceParams?: Record<string, string>) {
  const reply = await client.request(id, 'SendMessage', { message: userMessage('params') }, serviceParams)
  return reply.result.task.artifacts[0].parts[0].data
}

t.test('per-request serviceParams reach the executor, merged over the upgrade headers, for that call only', async t => {
  const client = await connectV1(v1Url(server.origin), { headers: { 'X-Client': 'upgrade', 'X-Kept': 'kept' } })
  t.teardown(() => client.close())
  const first = await paramsSeen(client, 'p1', { 'a2a-version': '1.0', 'x-client': 'request', 'x-extra': 'only here' })
  t.equal(first['x-client'], 'request', 'the request wins over the upgrade')
  t.equal(first['x-kept'], 'kept', 'the upgrade headers stay under it')
  t.equal(first['x-extra'], 'only here')
  t.equal(first['a2a-version'], '1.0')
  const second = await paramsSeen(client, 'p2')
  t.equal(second['x-client'], 'upgrade', 'the next call sees the upgrade headers again')
  t.notOk('x-extra' in second)
  t.equal(second[':connection-id'], first[':connection-id'], 'one connection')
})

t.test('names are lowercased, values that are not visible ASCII left out, the server\'s colon names kept', async t => {
  const client = await connectV1(v1Url(server.origin))
  t.teardown(() => client.close())
  const own = await paramsSeen(client, 'own')
  const seen = await paramsSeen(client, 'rules', {
    'A2A-Version': '1.0', 'X-Mixed-Case': 'Value', 'x-name': 'café', 'x-tab': 'a\tb', ':connection-id': 'spoofed', ':path': '/elsewhere'
  })
  t.equal(seen['x-mixed-case'], 'Value')
  t.equal(seen['x-tab'], 'a\tb')
  t.notOk('x-name' in seen, 'x-name: café is not seen')
  t.equal(seen[':connection-id'], own[':connection-id'], 'a client cannot set a reserved name')
  t.equal(seen[':path'], '/')
})

t.test('merged with a request\'s own, the service parameters have no prototype, as on every binding', async t => {
  const seen: Array<object | null> = []
  const own = await startServer({
    executor: {
      async execute (context, events) {
        seen.push(Object.getPrototypeOf(context.serviceParams))
        await events.completed()
      }
    }
  })
  t.teardown(() => own.close())
  const client = await connectV1(v1Url(own.origin))
  t.teardown(() => client.close())
  await client.request('bare', 'SendMessage', { message: userMessage('x') })
  await client.request('merged', 'SendMessage', { message: userMessage('x') }, { 'a2a-version': '1.0', 'x-own': 'yes', constructor: 'c' })
  t.same(seen, [null, null])
})

t.test('the version is read per request: it may vary, and the upgrade needs none', async t => {
  // An upgrade whose own A2A-Version is unsupported: every request brings its own.
  const client = await connectV1(v1Url(server.origin), { headers: { 'A2A-Version': '0.3' } })
  t.teardown(() => client.close())
  t.equal((await client.request('v1', 'GetTask', { id: 'x' }, { 'a2a-version': '1.0' })).error.code, -32001)
  t.equal((await client.request('v2', 'GetTask', { id: 'x' }, { 'a2a-version': '1.0.1' })).error.code, -32001)
})

t.test('without a version in serviceParams the upgrade\'s header or query parameter applies', async t => {
  const byQuery = await connectV1(`${v1Url(server.origin)}?A2A-Version=1.0`)
  t.equal((await byQuery.request('q', 'GetTask', { id: 'x' }, {})).error.code, -32001)
  t.equal((await paramsSeen(byQuery, 'qp', {}))['a2a-version'], '1.0')
  byQuery.close()
  const byHeader = await connectV1(v1Url(server.origin), { headers: { 'A2A-Version': '1.0' } })
  t.equal((await byHeader.request('h', 'GetTask', { id: 'x' }, {})).error.code, -32001)
  byHeader.close()
})
