// What every bus across instances must do, run against each implementation: two
// instances sharing PostgreSQL, in a cluster, act as one. A stream opened on B for a task
// running on A gets the snapshot, then A's events in order, and the bus has no listener
// left once the stream ended; an event carries its version across; a command reaches the
// instance it names; CancelTask on B cancels the executor running on A.
import Fastify, { type FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { a2aWebSocket, openPostgresStores, type BusCommand, type EventBus, type StreamResponse } from '../../lib/index.js'
import { topicOf } from '../../lib/bus/topic.js'
import { conformanceAgent, conformanceCard } from '../../examples/agent.js'
import { dropSchemas, requirePostgres, uniqueSchema } from './postgres.js'
import { eventually, userMessage } from './server.js'
import { connect, wsUrl, type WsClient } from './ws.js'

interface Instance {
  fastify: FastifyInstance
  origin: string
}

/** `makeBus(schema)` gives each instance its bus; the plugin closes it with the instance. */
export async function busContract (t: Test, makeBus: (url: string, schema: string) => EventBus): Promise<void> {
  const url = await requirePostgres(t)
  if (url === undefined) return
  const schema = uniqueSchema('bus')

  async function instance (): Promise<Instance> {
    const stores = await openPostgresStores({ connectionString: url as string, schema })
    const fastify = Fastify()
    await fastify.register(a2aWebSocket, {
      executor: conformanceAgent,
      card: conformanceCard,
      taskStore: stores.taskStore,
      pushConfigStore: stores.pushConfigStore,
      bus: makeBus(url as string, schema),
      cluster: { store: stores.clusterStore }
    })
    fastify.addHook('onClose', async () => { await stores.close() })
    await fastify.listen({ host: '127.0.0.1', port: 0 })
    return { fastify, origin: `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}` }
  }

  const a = await instance()
  const b = await instance()
  t.teardown(async () => {
    await a.fastify.close()
    await b.fastify.close()
    await dropSchemas(url, [schema])
  })

  /** Streams `text` on A over WebSocket; resolves once B lists its task WORKING, with a client on B. */
  async function workingOnA (t: Test, text: string): Promise<{ fromA: Promise<any[]>, onB: WsClient, task: any }> {
    const onA = await connect(wsUrl(a.origin))
    const onB = await connect(wsUrl(b.origin))
    t.teardown(() => { onA.close(); onB.close() })
    const fromA = onA.stream('SendStreamingMessage', { message: userMessage(text) }, 'on-a')
    let task: any
    await eventually(async () => {
      [task] = (await onB.request('ListTasks', { status: 'TASK_STATE_WORKING' })).result.tasks
      return task !== undefined
    })
    return { fromA, onB, task }
  }

  t.test('a stream on B of a task running on A: the snapshot, then every event of A in order', async t => {
    const { fromA: onAStream, onB, task } = await workingOnA(t, 'sleep 1500')
    const frames = await onB.stream('SubscribeToTask', { id: task.id })
    const fromA = (await onAStream).slice(2)
    t.equal(frames[0].result.task.id, task.id)
    t.equal(frames[0].result.task.status.state, 'TASK_STATE_WORKING')
    t.same(frames.slice(1).map(frame => frame.result), fromA.map(frame => frame.result), 'B saw what A sent after the snapshot, event for event')
    t.same(frames.at(-1).result, { status: 'stream_complete' })
    t.equal(frames.at(-2).result.statusUpdate.status.state, 'TASK_STATE_COMPLETED')
    await eventually(() => b.fastify.a2a.bus.listenerCount() === 0)
  })

  t.test('an event reaches the other instance with its version; one published without a version arrives without', async t => {
    const topic = 'tenant\u0000versions'
    const received: Array<[StreamResponse, number | undefined]> = []
    const unsubscribe = b.fastify.a2a.bus.subscribe(topic, (event, version) => received.push([event, version]))
    t.teardown(unsubscribe)
    await b.fastify.a2a.bus.ready?.(topic)
    const stored: StreamResponse = { statusUpdate: { taskId: 'versions', contextId: 'c', status: { state: 'TASK_STATE_WORKING' } } }
    const reply: StreamResponse = { message: { messageId: 'reply', role: 'ROLE_AGENT', parts: [{ text: 'hi' }] } }
    a.fastify.a2a.bus.publish(topic, stored, 7)
    a.fastify.a2a.bus.publish(topic, reply)
    await eventually(() => received.length === 2)
    t.same(received, [[stored, 7], [reply, undefined]])
  })

  t.test('a command reaches the instance it names, from another instance', async t => {
    const command: BusCommand = { type: 'cancel', tenant: 'tenant', taskId: 'task' }
    const received: BusCommand[] = []
    const stop = await a.fastify.a2a.bus.onCommand?.('contract-instance', (one) => received.push(one))
    t.teardown(() => stop?.())
    b.fastify.a2a.bus.command?.('contract-instance', command)
    await eventually(() => received.length > 0)
    t.same(received, [command])
  })

  t.test('commands and events never share a channel, whatever the task id', async t => {
    // Default-tenant topics are the task ids themselves: ids spelt like a command channel's tail.
    const topics = [topicOf('', 'command:contract-clash'), topicOf('', 'command\u0000contract-clash'), topicOf('command', 'contract-clash')]
    const received = new Map<string, StreamResponse[]>(topics.map(topic => [topic, []]))
    for (const topic of topics) {
      const unsubscribe = b.fastify.a2a.bus.subscribe(topic, (event) => received.get(topic)?.push(event))
      t.teardown(unsubscribe)
      await b.fastify.a2a.bus.ready?.(topic)
    }
    const commands: unknown[] = []
    const stop = await b.fastify.a2a.bus.onCommand?.('contract-clash', (one) => commands.push(one))
    t.teardown(() => stop?.())
    const eventOf = (topic: string, round: number): StreamResponse =>
      ({ statusUpdate: { taskId: `clash-${topics.indexOf(topic)}-${round}`, contextId: 'c', status: { state: 'TASK_STATE_WORKING' } } })
    for (const topic of topics) a.fastify.a2a.bus.publish(topic, eventOf(topic, 1))
    const command: BusCommand = { type: 'cancel', tenant: '', taskId: 'clash' }
    a.fastify.a2a.bus.command?.('contract-clash', command)
    await eventually(() => commands.length > 0 && topics.every(topic => (received.get(topic)?.length ?? 0) > 0))
    // A channel keeps its order: once a second event has come, whatever the first round sent on it has.
    for (const topic of topics) a.fastify.a2a.bus.publish(topic, eventOf(topic, 2))
    await eventually(() => topics.every(topic => (received.get(topic)?.length ?? 0) > 1))
    for (const topic of topics) t.same(received.get(topic), [eventOf(topic, 1), eventOf(topic, 2)], `topic ${JSON.stringify(topic)}: its own events, and no command`)
    t.same(commands, [command], 'the command handler got the command alone')
  })

  t.test('hold on A, CancelTask on B: B answers with the canceled task, A\'s stream ends canceled', async t => {
    const { fromA: held, onB, task } = await workingOnA(t, 'hold')
    const canceled = await onB.request('CancelTask', { id: task.id })
    t.equal(canceled.result.id, task.id)
    t.equal(canceled.result.status.state, 'TASK_STATE_CANCELED')
    const frames = await held
    t.equal(frames.at(-2).result.statusUpdate.status.state, 'TASK_STATE_CANCELED')
    t.same(frames.at(-1).result, { status: 'stream_complete' })
  })
}
