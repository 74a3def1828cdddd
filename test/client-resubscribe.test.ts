// Reconnection (seed 000 §4): a stream cut because the server closed or dropped the
// connection reports StreamIncompleteError naming the task; resubscribe(taskId) opens a
// new connection, and its stream starts at the task's current snapshot and goes on.
import t from 'tap'
import type { FastifyRequest } from 'fastify'
import { A2AClient, JsonRpcTransport, StreamIncompleteError, WebSocketTransport, type StreamResponse } from '../lib/client/index.js'
import { startServer, userMessage } from './helpers/server.js'

const requests: FastifyRequest[] = []
const server = await startServer({ interceptors: [{ before (_context, call) { if (call.request !== undefined) requests.push(call.request) } }] })
t.teardown(() => server.close())
let connections = 0
server.fastify.websocketServer.on('connection', () => { connections++ })

async function cutStream (events: AsyncIterableIterator<StreamResponse>): Promise<StreamIncompleteError> {
  const error = await events.next().then(() => { throw new Error('the stream went on') }, (thrown: unknown) => thrown)
  if (!(error instanceof StreamIncompleteError)) throw error
  return error
}

async function rest (events: AsyncIterableIterator<StreamResponse>): Promise<StreamResponse[]> {
  const all: StreamResponse[] = []
  for await (const event of events) all.push(event)
  return all
}

for (const [how, cut] of [
  ['closes the connection (1001)', 1001],
  ['drops the connection', 1006]
] as const) {
  t.test(`the server ${how}: resubscribe continues from the snapshot on a new connection`, async t => {
    const client = new A2AClient(new WebSocketTransport({ url: server.origin.replace('http', 'ws') }))
    t.teardown(() => client.close())
    const events = client.sendStreamingMessage({ message: userMessage('hold') })
    t.equal((await events.next()).value?.task?.status.state, 'TASK_STATE_SUBMITTED')
    t.equal((await events.next()).value?.statusUpdate?.status.state, 'TASK_STATE_WORKING')
    const before = connections
    for (const socket of server.fastify.websocketServer.clients) {
      if (cut === 1001) socket.close(1001, 'going away')
      else socket.terminate()
    }

    const error = await cutStream(events)
    t.match(error, { closeCode: cut, received: 2, retryable: true })
    const taskId = error.taskId as string
    t.type(taskId, 'string')

    const resumed = client.resubscribe(taskId)
    const snapshot = (await resumed.next()).value as StreamResponse
    t.equal(connections - before, 1, 'over a new connection')
    t.equal(snapshot.task?.id, taskId)
    t.equal(snapshot.task?.status.state, 'TASK_STATE_WORKING')
    t.same(snapshot.task?.history?.map(message => message.parts[0]?.text), ['hold'])
    await client.cancelTask({ id: taskId })
    t.same((await rest(resumed)).map(event => event.statusUpdate?.status.state), ['TASK_STATE_CANCELED'])
  })
}

t.test('over JSON-RPC: a cut SSE stream, then resubscribe', async t => {
  const client = new A2AClient(new JsonRpcTransport({ url: server.endpoint }))
  const events = client.sendStreamingMessage({ message: userMessage('hold') })
  const { task } = (await events.next()).value ?? {}
  t.equal(task?.status.state, 'TASK_STATE_SUBMITTED')
  const { statusUpdate } = (await events.next()).value ?? {}
  t.same([statusUpdate?.taskId, statusUpdate?.status.state], [task?.id, 'TASK_STATE_WORKING'])
  requests.at(-1)?.raw.socket.destroy()
  const { taskId } = await cutStream(events)
  const resumed = client.resubscribe(taskId as string)
  t.equal((await resumed.next()).value?.task?.status.state, 'TASK_STATE_WORKING')
  await client.cancelTask({ id: taskId as string })
  t.same((await rest(resumed)).map(event => event.statusUpdate?.status.state), ['TASK_STATE_CANCELED'])
})
