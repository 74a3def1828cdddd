// A peer that answers a stream with something that is not an event (no task status, a null
// result, an array): the stream fails with InvalidResponseError where the event is read, on
// every transport, without handing the bad event on. Over WebSocket the transport goes on
// serving its other calls, and the process does not crash (the event is read in the
// socket's message listener); a2a.v1 also gives the stream up on the peer.
import { createServer } from 'node:http'
import t, { type Test } from 'tap'
import { WebSocketServer } from 'ws'
import {
  A2AClient, InvalidResponseError, JsonRpcTransport, RestTransport, WebSocketTransport, type StreamResponse
} from '../lib/client/index.js'

const bad: Array<[string, unknown]> = [
  ['a task without its status', { task: { id: 't1', contextId: 'c' } }],
  ['a status update without its status', { statusUpdate: { taskId: 't1', contextId: 'c' } }],
  ['null', null],
  ['an array', [{ task: { id: 't1', contextId: 'c', status: { state: 'TASK_STATE_WORKING' } } }]],
  ['an object of none of the four kinds', { result: 'x' }]
]

const message = { messageId: 'm1', role: 'ROLE_USER' as const, parts: [{ text: 'hi' }] }

/** A fetch answering every request with one SSE event holding `data`. */
const sseOf = (data: unknown) => async () => new Response(`data: ${JSON.stringify(data)}\n\n`, { headers: { 'content-type': 'text/event-stream' } })

async function firstOutcome (events: AsyncIterableIterator<StreamResponse>): Promise<{ value?: IteratorResult<StreamResponse>, error?: unknown }> {
  return await events.next().then(value => ({ value }), (error: unknown) => ({ error }))
}

for (const [what, event] of bad) {
  t.test(`JSON-RPC over SSE, ${what}: InvalidResponseError, nothing handed on`, async t => {
    const client = new A2AClient(new JsonRpcTransport({ url: 'http://127.0.0.1:9/', fetch: sseOf({ jsonrpc: '2.0', id: 1, result: event }) }))
    const outcome = await firstOutcome(client.sendStreamingMessage({ message }))
    t.type(outcome.error, InvalidResponseError)
    t.match(outcome.error, { retryable: false, message: /^a stream event is not a task, a message, a status update or an artifact update: / })
  })

  t.test(`HTTP+JSON over SSE, ${what}: InvalidResponseError, nothing handed on`, async t => {
    const client = new A2AClient(new RestTransport({ url: 'http://127.0.0.1:9', fetch: sseOf(event) }))
    const outcome = await firstOutcome(client.subscribeToTask({ id: 't1' }))
    t.type(outcome.error, InvalidResponseError)
    t.match(outcome.error, { retryable: false })
  })
}

/** A WebSocket peer of either dialect: a stream gets `event` as its result; any GetTask gets a task. */
async function peer (t: Test, event: unknown) {
  const http = createServer()
  const frames: any[] = []
  const wss = new WebSocketServer({ server: http, handleProtocols: (offered) => offered.has('a2a.v1') ? 'a2a.v1' : false })
  wss.on('connection', (socket) => {
    socket.on('message', (data) => {
      const frame = JSON.parse(String(data))
      frames.push(frame)
      if (frame.method === 'SendStreamingMessage') socket.send(JSON.stringify({ jsonrpc: '2.0', id: frame.id, result: event }))
      if (frame.method === 'GetTask') {
        socket.send(JSON.stringify({ jsonrpc: '2.0', id: frame.id, result: { id: frame.params.id, contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' } } }))
      }
    })
  })
  await new Promise<void>(resolve => http.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>(resolve => { for (const client of wss.clients) client.terminate(); wss.close(); http.close(() => resolve()) }))
  return { url: `ws://127.0.0.1:${(http.address() as { port: number }).port}`, frames }
}

for (const dialect of ['seed000', 'a2a.v1'] as const) {
  for (const [what, event] of bad) {
    t.test(`WebSocket ${dialect}, ${what}: InvalidResponseError; the connection serves on`, async t => {
      const { url, frames } = await peer(t, event)
      const client = new A2AClient(new WebSocketTransport({ url, dialect }))
      t.teardown(() => client.close())
      const outcome = await firstOutcome(client.sendStreamingMessage({ message }))
      t.type(outcome.error, InvalidResponseError)
      t.same(await client.getTask({ id: 't2' }), { id: 't2', contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' } }, 'the next call is answered')
      const streamId = frames.find(frame => frame.method === 'SendStreamingMessage')?.id
      const cancels = frames.filter(frame => frame.cancelStream === true)
      t.same(cancels, dialect === 'a2a.v1' ? [{ jsonrpc: '2.0', id: streamId, cancelStream: true }] : [],
        dialect === 'a2a.v1' ? 'the stream is given up on the peer' : 'seed 000 has no frame to give a stream up')
    })
  }
}
