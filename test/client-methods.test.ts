// fastify-a2a/client: each of the eleven methods through A2AClient over each transport
// (WebSocket, JSON-RPC, HTTP+JSON), against a real listening server under a prefix.
import t from 'tap'
import {
  A2AClient, JsonRpcTransport, RestTransport, WebSocketTransport, type StreamResponse, type Transport
} from '../lib/client/index.js'
import { startServer, userMessage } from './helpers/server.js'

const server = await startServer({ prefix: '/a2a', push: { allow: ['127.0.0.1'] } })
t.teardown(() => server.close())

const transports: Record<string, () => Transport> = {
  // No WebSocket option: on Node 20 the transport imports `ws` itself.
  WebSocket: () => new WebSocketTransport({ url: `${server.origin.replace('http', 'ws')}/a2a` }),
  'JSON-RPC': () => new JsonRpcTransport({ url: server.endpoint }),
  'HTTP+JSON': () => new RestTransport({ url: server.endpoint })
}

/** Each event by its kind, with the state or artifact text it carries. */
function summary (event: StreamResponse): string {
  if (event.task !== undefined) return `task ${event.task.status.state}`
  if (event.statusUpdate !== undefined) return `status ${event.statusUpdate.status.state}`
  // ProtoJSON leaves false booleans out.
  if (event.artifactUpdate !== undefined) return `artifact ${event.artifactUpdate.artifact.parts[0]?.text} append=${event.artifactUpdate.append === true} last=${event.artifactUpdate.lastChunk === true}`
  return `message ${event.message?.parts[0]?.text}`
}

async function collect (events: AsyncIterable<StreamResponse>): Promise<StreamResponse[]> {
  const all: StreamResponse[] = []
  for await (const event of events) all.push(event)
  return all
}

for (const [name, make] of Object.entries(transports)) {
  t.test(name, async t => {
    const client = new A2AClient(make())
    t.teardown(() => client.close())

    t.test('SendMessage answers the completed task', async t => {
      const answer = await client.sendMessage({ message: userMessage('hello over ' + name) })
      t.equal(answer.task?.status.state, 'TASK_STATE_COMPLETED')
      t.same(answer.task?.artifacts?.map(a => [a.artifactId, a.parts]), [['echo', [{ text: 'hello over ' + name }]]])
    })

    t.test('SendMessage answers a Message for `message <text>`', async t => {
      const answer = await client.sendMessage({ message: userMessage('message hi') })
      t.equal(answer.task, undefined)
      t.same(answer.message?.parts, [{ text: 'hi' }])
      t.equal(answer.message?.role, 'ROLE_AGENT')
    })

    t.test('SendStreamingMessage yields every event in order and ends after the last', async t => {
      const events = await collect(client.sendStreamingMessage({ message: userMessage('stream 3') }))
      t.same(events.map(summary), [
        'task TASK_STATE_SUBMITTED',
        'status TASK_STATE_WORKING',
        'artifact chunk 1 append=false last=false',
        'artifact chunk 2 append=true last=false',
        'artifact chunk 3 append=true last=true',
        'status TASK_STATE_COMPLETED'
      ])
    })

    t.test('GetTask and ListTasks find the task', async t => {
      const sent = await client.sendMessage({ message: userMessage('find me') })
      const task = sent.task!
      const got = await client.getTask({ id: task.id, historyLength: 1 })
      t.equal(got.id, task.id)
      t.equal(got.status.state, 'TASK_STATE_COMPLETED')
      t.equal(got.history?.length, 1)
      const listed = await client.listTasks({ contextId: task.contextId, includeArtifacts: true })
      t.same(listed.tasks.map(each => each.id), [task.id])
      t.same(listed.tasks[0]?.artifacts?.[0]?.parts, [{ text: 'find me' }])
      t.equal(listed.totalSize, 1)
    })

    t.test('CancelTask cancels a held task', async t => {
      const sent = await client.sendMessage({ message: userMessage('hold'), configuration: { returnImmediately: true } })
      const canceled = await client.cancelTask({ id: sent.task!.id })
      t.equal(canceled.id, sent.task!.id)
      t.equal(canceled.status.state, 'TASK_STATE_CANCELED')
    })

    t.test('SubscribeToTask starts at the snapshot and ends at the terminal state', async t => {
      const sent = await client.sendMessage({ message: userMessage('hold'), configuration: { returnImmediately: true } })
      const id = sent.task!.id
      const events = client.subscribeToTask({ id })
      const first = await events.next()
      t.equal(first.value?.task?.id, id)
      t.equal(first.value?.task?.status.state, 'TASK_STATE_WORKING')
      await client.cancelTask({ id })
      const rest = await collect(events)
      t.same(rest.map(summary), ['status TASK_STATE_CANCELED'])
    })

    t.test('the four push-config methods', async t => {
      const sent = await client.sendMessage({ message: userMessage('push configs') })
      const taskId = sent.task!.id
      const created = await client.createTaskPushNotificationConfig({ taskId, url: 'http://127.0.0.1:9/hook', token: 'secret' })
      t.equal(created.taskId, taskId)
      t.equal(created.url, 'http://127.0.0.1:9/hook')
      t.type(created.id, 'string')
      const got = await client.getTaskPushNotificationConfig({ taskId, id: created.id! })
      t.same(got, created)
      const listed = await client.listTaskPushNotificationConfigs({ taskId })
      t.same(listed.configs, [created])
      t.equal(await client.deleteTaskPushNotificationConfig({ taskId, id: created.id! }), undefined)
      t.same((await client.listTaskPushNotificationConfigs({ taskId })).configs, [])
    })

    t.test('GetExtendedAgentCard', async t => {
      const card = await client.getExtendedAgentCard()
      t.equal(card.name, 'fastify-a2a conformance agent')
      t.same(card.supportedInterfaces.map(i => i.protocolBinding), ['JSONRPC', 'HTTP+JSON', 'https://a2a-rust.com/bindings/websocket/v1', 'WEBSOCKET'])
    })
  })
}
