// Where a client stream ends, on every transport: at a message that is the stream's first
// event (a direct reply), or at a terminal state. A message later in a task's stream (an
// agent's message on the task, which some servers send) is handed on and the stream goes on;
// a body that ends right after one is incomplete, as after any other non-final event.
import { createServer } from 'node:http'
import t, { type Test } from 'tap'
import { WebSocketServer } from 'ws'
import {
  A2AClient, JsonRpcTransport, RestTransport, StreamIncompleteError, WebSocketTransport, type StreamResponse
} from '../lib/client/index.js'

const message = { messageId: 'm1', role: 'ROLE_USER' as const, parts: [{ text: 'hi' }] }
const ids = { taskId: 't1', contextId: 'c1' }
const status = (state: string) => ({ statusUpdate: { ...ids, status: { state } } })
const agentMessage = { message: { messageId: 'a1', role: 'ROLE_AGENT', parts: [{ text: 'thinking aloud' }], ...ids } }

/** A task's stream with an agent message in its middle, then what the peer sends after. */
const chatty = [{ task: { id: 't1', contextId: 'c1', status: { state: 'TASK_STATE_SUBMITTED' } } }, status('TASK_STATE_WORKING'), agentMessage, status('TASK_STATE_INPUT_REQUIRED')]
const reply = [{ message: { messageId: 'a2', role: 'ROLE_AGENT', parts: [{ text: 'direct' }] } }, status('TASK_STATE_WORKING')]

/** A fetch answering every request with an SSE body of `events`, each wrapped by `wrap`. */
const sseOf = (events: unknown[], wrap: (event: unknown) => unknown) => async () =>
  new Response(events.map(event => `data: ${JSON.stringify(wrap(event))}\n\n`).join(''), { headers: { 'content-type': 'text/event-stream' } })

async function read (events: AsyncIterableIterator<StreamResponse>): Promise<{ got: StreamResponse[], error?: unknown }> {
  const got: StreamResponse[] = []
  try {
    for await (const event of events) got.push(event)
  } catch (error) {
    return { got, error }
  }
  return { got }
}

const http = {
  'JSON-RPC': (events: unknown[]) => new JsonRpcTransport({ url: 'http://127.0.0.1:9/', fetch: sseOf(events, result => ({ jsonrpc: '2.0', id: 1, result })) }),
  'HTTP+JSON': (events: unknown[]) => new RestTransport({ url: 'http://127.0.0.1:9', fetch: sseOf(events, event => event) })
}

for (const [binding, transport] of Object.entries(http)) {
  t.test(`${binding}: a message in the middle of a task's stream is handed on; the stream ends at its interrupted state`, async t => {
    const { got, error } = await read(new A2AClient(transport(chatty)).sendStreamingMessage({ message }))
    t.equal(error, undefined)
    t.same(got, chatty)
  })

  t.test(`${binding}: a message as the first event is the whole stream`, async t => {
    const { got, error } = await read(new A2AClient(transport(reply)).sendStreamingMessage({ message }))
    t.equal(error, undefined)
    t.same(got, reply.slice(0, 1), 'nothing after it is read')
  })

  t.test(`${binding}: a body that ends right after a later message is incomplete`, async t => {
    const { got, error } = await read(new A2AClient(transport(chatty.slice(0, 3))).sendStreamingMessage({ message }))
    t.same(got, chatty.slice(0, 3))
    t.type(error, StreamIncompleteError)
    t.match(error, { taskId: 't1', received: 3 })
  })
}

/** A WebSocket peer of either dialect answering a stream with the result frames of `events`, and nothing more. */
async function peer (t: Test, events: unknown[]) {
  const server = createServer()
  const wss = new WebSocketServer({ server, handleProtocols: (offered) => offered.has('a2a.v1') ? 'a2a.v1' : false })
  wss.on('connection', (socket) => {
    socket.on('message', (data) => {
      const frame = JSON.parse(String(data))
      if (frame.method === 'SendStreamingMessage') for (const result of events) socket.send(JSON.stringify({ jsonrpc: '2.0', id: frame.id, result }))
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>(resolve => { for (const client of wss.clients) client.terminate(); wss.close(); server.close(() => resolve()) }))
  return `ws://127.0.0.1:${(server.address() as { port: number }).port}`
}

for (const dialect of ['seed000', 'a2a.v1'] as const) {
  t.test(`WebSocket ${dialect}: a message in the middle of a task's stream is handed on; the stream ends at its terminal state`, async t => {
    const events = [...chatty.slice(0, 3), status('TASK_STATE_COMPLETED')]
    const client = new A2AClient(new WebSocketTransport({ url: await peer(t, events), dialect }))
    t.teardown(() => client.close())
    const { got, error } = await read(client.sendStreamingMessage({ message }))
    t.equal(error, undefined)
    t.same(got, events)
  })

  t.test(`WebSocket ${dialect}: a message as the first event is the whole stream`, async t => {
    const client = new A2AClient(new WebSocketTransport({ url: await peer(t, reply), dialect }))
    t.teardown(() => client.close())
    const { got, error } = await read(client.sendStreamingMessage({ message }))
    t.equal(error, undefined)
    t.same(got, reply.slice(0, 1))
  })
}
