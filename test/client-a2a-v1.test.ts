// WebSocketTransport in the a2a.v1 dialect (seed 001) against a real server, the frames
// read on the client's own socket: the subprotocol offered and required, requests with
// their serviceParams, streamEnd; an abandoned stream stopped with cancelStream and its
// slot freed at its one streamEnd; close codes as typed errors (4001, 4002 from the
// plugin; every code from a peer that closes on cue); the factory's WEBSOCKET interface.
import t from 'tap'
import * as server from '../lib/index.js'
import {
  A2AClient, A2AClientError, A2A_V1_BINDING, A2A_V1_SUBPROTOCOL, AuthenticationRequiredError, CallTimeoutError, ConnectionError,
  StreamIncompleteError, SubprotocolMismatchError, UnexpectedStatusError, UnsupportedVersionError, WebSocketTransport, createClient,
  type StreamResponse
} from '../lib/client/index.js'
import { withGlobalWebSocket } from './helpers/global-websocket.js'
import { eventually, startServer, userMessage } from './helpers/server.js'
import { wireSpy } from './helpers/wire-spy.js'
import { closingPeer } from './helpers/ws-peers.js'

const agent = await startServer()
t.teardown(() => agent.close())
const wsOrigin = agent.origin.replace('http', 'ws')

function v1Client (options: Partial<ConstructorParameters<typeof WebSocketTransport>[0]> = {}) {
  const spy = wireSpy()
  const transport = new WebSocketTransport({ url: wsOrigin, dialect: 'a2a.v1', WebSocket: spy.WebSocket, ...options })
  return { spy, transport, client: new A2AClient(transport) }
}

/** A stream's first events, up to and including the first that `until` accepts. */
async function readUntil (events: AsyncIterableIterator<StreamResponse>, until: (event: StreamResponse, index: number) => boolean): Promise<StreamResponse[]> {
  const read: StreamResponse[] = []
  for (;;) {
    const { value, done } = await events.next()
    if (done === true) throw new Error('the stream ended first')
    read.push(value)
    if (until(value, read.length)) return read
  }
}

t.test('the client at its default maxPending against the server\'s default limits: a full burst of calls is served, the connection kept', async t => {
  const { client, transport } = v1Client()
  t.teardown(() => transport.close())
  const answers = await Promise.all(Array.from({ length: 128 }, (_, i) => client.sendMessage({ message: userMessage(`burst ${i}`) })))
  t.equal(answers.filter(answer => answer.task?.status.state === 'TASK_STATE_COMPLETED').length, 128, 'every call answered')
  const again = await client.sendMessage({ message: userMessage('after the burst') })
  t.equal(again.task?.status.state, 'TASK_STATE_COMPLETED', 'on the same connection: no 1008 for the rate')
})

t.test("the client's names for the dialect are the server's", async t => {
  t.equal(A2A_V1_BINDING, server.A2A_V1_BINDING)
  t.equal(A2A_V1_SUBPROTOCOL, server.A2A_V1_SUBPROTOCOL)
})

t.test('a2a.v1 is offered and selected; each request carries serviceParams with the version; a stream ends at its streamEnd', async t => {
  const { spy, transport, client } = v1Client()
  t.teardown(() => client.close())
  t.equal(transport.binding, 'WEBSOCKET')
  const message = userMessage('hello')
  const answer = await client.sendMessage({ message })
  t.equal(answer.task?.status.state, 'TASK_STATE_COMPLETED')
  t.equal(spy.sockets[0]?.protocol, 'a2a.v1')
  t.same(spy.sent[0], { jsonrpc: '2.0', id: '1', method: 'SendMessage', params: { message }, serviceParams: { 'a2a-version': '1.0' } })
  t.same(spy.received[0], { jsonrpc: '2.0', id: '1', result: answer })

  const events: StreamResponse[] = []
  for await (const event of client.sendStreamingMessage({ message: userMessage('stream 2') })) events.push(event)
  t.same(events.map(event => Object.keys(event)[0]), ['task', 'statusUpdate', 'artifactUpdate', 'artifactUpdate', 'statusUpdate'])
  await eventually(() => transport.pending === 0)
  t.same(spy.received.at(-1), { jsonrpc: '2.0', id: '2', streamEnd: true }, 'the slot is freed by the streamEnd')
  t.same(spy.sent.map(frame => frame.id), ['1', '2'], 'no cancelStream for a stream read to its end')

  const pinned = v1Client({ serviceParams: { 'A2A-Version': '1.0.1' } })
  t.teardown(() => pinned.client.close())
  await t.rejects(pinned.client.getTask({ id: 'x' }), { code: -32001 })
  t.same(pinned.spy.sent[0].serviceParams, { 'a2a-version': '1.0.1' }, "the transport's own version goes in every request")
})

t.test('aborting a `stream 1000` sends one cancelStream: exactly one streamEnd follows and no frame after it', async t => {
  const { spy, transport, client } = v1Client()
  t.teardown(() => client.close())
  const controller = new AbortController()
  const events = client.sendStreamingMessage({ message: userMessage('stream 1000') }, { signal: controller.signal })
  let chunks = 0
  const read = await readUntil(events, event => event.artifactUpdate !== undefined && ++chunks === 3)
  const taskId = read[0]?.task?.id as string
  controller.abort()
  await t.rejects(events.next(), { name: 'AbortError' })
  t.same(await events.next(), { value: undefined, done: true })
  const id = spy.sent[0].id
  t.same(spy.sent.slice(1), [{ jsonrpc: '2.0', id, cancelStream: true }])

  await eventually(() => transport.pending === 0)
  const ofStream = () => spy.received.filter(frame => frame.id === id)
  t.same(ofStream().at(-1), { jsonrpc: '2.0', id, streamEnd: true }, 'the slot is freed at the streamEnd')
  t.notOk(ofStream().some(frame => frame.result?.statusUpdate?.status.state === 'TASK_STATE_COMPLETED'), 'the server stopped the stream mid-way')
  // The task runs on to its end; its events after the streamEnd would have come by the time it has.
  await eventually(async () => (await client.getTask({ id: taskId })).status.state === 'TASK_STATE_COMPLETED')
  t.equal(ofStream().filter(frame => frame.streamEnd === true).length, 1)
  t.same(ofStream().at(-1), { jsonrpc: '2.0', id, streamEnd: true }, 'no frame after the streamEnd')
  t.equal(spy.sockets.length, 1, 'on the one connection')
})

t.test('a timeout, or leaving the loop, also sends cancelStream; the server releases the subscription and the task goes on', async t => {
  const { spy, transport, client } = v1Client()
  t.teardown(() => client.close())
  const timed = client.sendStreamingMessage({ message: userMessage('hold') }, { timeout: 300 })
  const [first] = await readUntil(timed, (_event, count) => count === 2)
  await t.rejects(timed.next(), CallTimeoutError)
  let left: StreamResponse | undefined
  for await (const event of client.sendStreamingMessage({ message: userMessage('hold') })) {
    left = event
    break
  }
  t.same(spy.sent.filter(frame => frame.cancelStream === true), [
    { jsonrpc: '2.0', id: '1', cancelStream: true },
    { jsonrpc: '2.0', id: '2', cancelStream: true }
  ])
  await eventually(() => transport.pending === 0)
  await eventually(() => agent.fastify.a2a.bus.listenerCount() === 0)
  for (const task of [first?.task, left?.task]) {
    t.equal((await client.getTask({ id: task!.id })).status.state, 'TASK_STATE_WORKING', 'still running')
    t.equal((await client.cancelTask({ id: task!.id })).status.state, 'TASK_STATE_CANCELED')
  }
  t.same(spy.received.filter(frame => frame.id === '1' || frame.id === '2').filter(frame => frame.streamEnd === true).length, 2)
  t.notOk(spy.received.some(frame => (frame.id === '1' || frame.id === '2') && frame.result?.statusUpdate?.status.state === 'TASK_STATE_CANCELED'),
    'the stopped streams saw nothing of the cancel')
})

t.test('a call asking for an unsupported version gets its -32009; the connection and its streams go on', async t => {
  const { client } = v1Client()
  t.teardown(() => client.close())
  const held = client.sendStreamingMessage({ message: userMessage('hold') })
  const [first] = await readUntil(held, (_event, count) => count === 2)
  const old = await client.getTask({ id: 'x' }, { serviceParams: { 'A2A-Version': '0.3' } }).catch((error: unknown) => error)
  t.type(old, A2AClientError)
  t.match(old, { code: -32009, reason: 'VERSION_NOT_SUPPORTED', retryable: false })
  t.equal((await client.cancelTask({ id: first!.task!.id })).status.state, 'TASK_STATE_CANCELED')
  const [canceled] = await readUntil(held, () => true)
  t.equal(canceled?.statusUpdate?.status.state, 'TASK_STATE_CANCELED', 'the held stream saw the cancel on the same connection')
})

t.test('close 4001: the refused call is an UnexpectedStatusError 401; the others on the connection an AuthenticationRequiredError', async t => {
  const valid = new Set(['token-1', 'token-2'])
  const guarded = await startServer({ auth: { bearer: { verify: (token) => valid.has(token) ? { subject: token } : undefined } } })
  t.teardown(() => guarded.close())
  const { client } = v1Client({ url: guarded.origin.replace('http', 'ws'), serviceParams: { Authorization: 'Bearer token-1' } })
  t.teardown(() => client.close())
  const held = client.sendStreamingMessage({ message: userMessage('hold') })
  const [first] = await readUntil(held, (_event, count) => count === 2)
  valid.delete('token-1')
  const refused = await client.getTask({ id: 'x' }).catch((error: unknown) => error)
  t.type(refused, UnexpectedStatusError)
  t.match(refused, { status: 401, retryable: false, wwwAuthenticate: 'Bearer realm="a2a", error="invalid_token"' })
  const cut = await held.next().catch((error: unknown) => error)
  t.type(cut, AuthenticationRequiredError)
  t.match(cut, {
    closeCode: 4001,
    retryable: false,
    message: 'the connection closed (4001 authentication required) after 2 events, before the stream ended: the agent wants a new credential'
  })
  const again = await client.getTask({ id: 'x' }).catch((error: unknown) => error)
  t.match(again, { name: 'UnexpectedStatusError', status: 401 }, 'a new connection with the same credential is refused at the upgrade')
  const renewed = new A2AClient(new WebSocketTransport({ url: guarded.origin.replace('http', 'ws'), dialect: 'a2a.v1', serviceParams: { Authorization: 'Bearer token-2' } }))
  t.teardown(() => renewed.close())
  t.equal((await renewed.cancelTask({ id: first!.task!.id })).status.state, 'TASK_STATE_CANCELED', 'a new credential on a new connection')
})

t.test('every close code surfaces with its retryability, for a call and for a stream', async t => {
  const peer = await closingPeer()
  t.teardown(() => peer.close())
  const expected: Array<[number, Function, boolean]> = [
    [1000, ConnectionError, true],
    [1001, ConnectionError, true],
    [1002, ConnectionError, false],
    [1003, ConnectionError, false],
    [1008, ConnectionError, true],
    [1009, ConnectionError, false],
    [1011, ConnectionError, true],
    [1013, ConnectionError, true],
    [4000, ConnectionError, false],
    [4001, AuthenticationRequiredError, false],
    [4002, UnsupportedVersionError, false]
  ]
  for (const [code, type, retryable] of expected) {
    const { client } = v1Client({ url: `${peer.url}/${code}` })
    const unary = await client.getTask({ id: 'x' }).catch((error: unknown) => error)
    t.type(unary, type, `${code}`)
    t.notOk(unary instanceof StreamIncompleteError, `${code}`)
    t.match(unary, { closeCode: code, retryable, message: new RegExp(`^the connection closed \\(${code} closed ${code}\\) before the answer arrived`) }, `${code}`)
    const stream = client.sendStreamingMessage({ message: userMessage('stream') })
    t.equal((await stream.next()).value?.task?.id, 'task-7')
    const cut = await stream.next().catch((error: unknown) => error)
    t.type(cut, type === ConnectionError ? StreamIncompleteError : type, `${code}, stream`)
    t.match(cut, { closeCode: code, retryable }, `${code}, stream`)
    if (type === ConnectionError) t.match(cut, { taskId: 'task-7', received: 1 }, `${code}, stream`)
    await client.close()
  }
})

t.test('a server that selects no subprotocol does not speak a2a.v1: over `ws` a SubprotocolMismatchError, not retryable', async t => {
  const seedOnly = await startServer({ websocket: { a2aV1: { enabled: false } } })
  t.teardown(() => seedOnly.close())
  const url = seedOnly.origin.replace('http', 'ws')
  const refused = await new WebSocketTransport({ url, dialect: 'a2a.v1' }).connect().catch((error: unknown) => error)
  t.type(refused, SubprotocolMismatchError)
  t.match(refused, {
    expected: 'a2a.v1',
    selected: '',
    retryable: false,
    message: `${url} selected no subprotocol where the subprotocol a2a.v1 was asked for: the agent does not speak this dialect there`
  })
  const seed = new A2AClient(new WebSocketTransport({ url }))
  t.teardown(() => seed.close())
  t.equal((await seed.sendMessage({ message: userMessage('seed 000 still') })).task?.status.state, 'TASK_STATE_COMPLETED')

  // The standard WebSocket API (a browser's, Node's own) fails such an upgrade itself and
  // does not say why: as any refused upgrade, a retryable ConnectionError 1006.
  const standard = await withGlobalWebSocket(`
    const { A2AClient, WebSocketTransport } = await import('./lib/client/index.ts')
    const refused = await new WebSocketTransport({ url: process.env.SEED_ONLY, dialect: 'a2a.v1' }).connect().catch(error => error)
    const client = new A2AClient(new WebSocketTransport({ url: process.env.AGENT_WS, dialect: 'a2a.v1' }))
    const message = { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'params' }] }
    const answer = await client.sendMessage({ message }, { serviceParams: { 'X-Own': 'per call' } })
    await client.close()
    console.log(JSON.stringify({ refused: { name: refused.name, closeCode: refused.closeCode, retryable: refused.retryable }, params: answer.task.artifacts[0].parts[0].data }))
  `, { SEED_ONLY: url, AGENT_WS: wsOrigin })
  t.same(standard.refused, { name: 'ConnectionError', closeCode: 1006, retryable: true })
  t.match(standard.params, { 'x-own': 'per call', 'sec-websocket-protocol': 'a2a.v1' }, 'and speaks a2a.v1 where it is selected')
})

t.test("the factory opens the card's WEBSOCKET interface in the a2a.v1 dialect; an unknown dialect is refused", async t => {
  const spy = wireSpy()
  const client = await createClient(agent.origin, { WebSocket: spy.WebSocket, preferences: ['WEBSOCKET'] })
  t.teardown(() => client.close())
  t.type(client.transport, WebSocketTransport)
  t.same(client.agentInterface, { url: wsOrigin, protocolBinding: 'WEBSOCKET', protocolVersion: '1.0' })
  t.equal(client.transport.binding, 'WEBSOCKET')
  t.equal((await client.sendMessage({ message: userMessage('via the card') })).task?.status.state, 'TASK_STATE_COMPLETED')
  t.equal(spy.sockets[0]?.protocol, 'a2a.v1')
  t.throws(() => new WebSocketTransport({ url: wsOrigin, dialect: 'a2a.v2' as 'a2a.v1' }), new TypeError('dialect must be one of seed000, a2a.v1; got a2a.v2'))
})

t.test("a2a.v1 allows 128 calls in progress by default, the server's maxStreams", async t => {
  const { transport, client } = v1Client()
  t.teardown(() => client.close())
  // Paced under the dialect's default rate limit (100 messages/s per connection).
  const streams: Array<AsyncIterableIterator<StreamResponse>> = []
  const firsts: Array<Promise<IteratorResult<StreamResponse>>> = []
  for (let i = 0; i < 128; i++) {
    const events = client.sendStreamingMessage({ message: userMessage('sleep 3000') })
    streams.push(events)
    firsts.push(events.next())
    await new Promise(resolve => setTimeout(resolve, 12))
  }
  t.ok((await Promise.all(firsts)).every(first => first.value?.task !== undefined), 'the server accepted all 128')
  t.equal(transport.pending, 128)
  await t.rejects(client.getTask({ id: 'x' }), { name: 'TooManyPendingError', limit: 128 })
  const lasts = await Promise.all(streams.map(async events => {
    let last: StreamResponse | undefined
    for await (const event of events) last = event
    return last
  }))
  t.ok(lasts.every(last => last?.statusUpdate?.status.state === 'TASK_STATE_COMPLETED'), 'each ended by itself')
  await eventually(() => transport.pending === 0)
})
