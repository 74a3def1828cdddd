// CancelTask across instances: B forwards it to the instance running the executor (a
// command on the bus) and answers once the task's terminal event arrives; when that
// instance is dead, B ends the task itself once the lease lapsed; an owner that never
// confirms gets B's call an Unavailable after `cancelTimeout`; a task that ends otherwise
// meanwhile is refused as on one instance; an instance starting a turn on the task cancels it itself.
import t from 'tap'
import type { AgentExecutor, ClusterStore, EventBus } from '../lib/index.js'
import { conformanceAgent } from '../examples/agent.js'
import { overrideStore, testCluster, type TestCluster } from './helpers/cluster-core.js'
import { call, eventually, result, userMessage } from './helpers/server.js'

const cluster = await testCluster(t)
if (cluster !== undefined) {
  const a = await cluster.start()
  const b = await cluster.start()

  /** Starts `hold` on `instance`; resolves with the task once it is WORKING. */
  async function hold (endpoint: string): Promise<any> {
    const { task } = await result(endpoint, 'SendMessage', { message: userMessage('hold'), configuration: { returnImmediately: true } })
    await eventually(async () => (await result(endpoint, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_WORKING')
    return task
  }

  t.test('hold on A, CancelTask on B: A aborts its executor and B answers with the CANCELED task', async t => {
    const task = await hold(a.endpoint)
    t.equal(a.fastify.a2a.handler.runningExecutions, 1)
    const canceled = await result(b.endpoint, 'CancelTask', { id: task.id })
    t.equal(canceled.id, task.id)
    t.equal(canceled.status.state, 'TASK_STATE_CANCELED')
    // Only A could end its executor: B claiming the task would have left it running.
    await eventually(() => a.fastify.a2a.handler.runningExecutions === 0)
    t.equal((await result(a.endpoint, 'GetTask', { id: task.id })).status.state, 'TASK_STATE_CANCELED', 'A agrees')
    const again = await call(b.endpoint, 'CancelTask', { id: task.id })
    t.equal(again.error.code, -32002, 'a second cancel: TaskNotCancelable, as on one instance')
  })

  t.test("a forwarded CancelTask carries the request's metadata to the owner's cancel hook", async t => {
    const seen: unknown[] = []
    const recording: AgentExecutor = {
      async execute (context, events) {
        if (context.message.parts[0]?.text !== 'hold') return await conformanceAgent.execute(context, events)
        await events.working()
        await new Promise(resolve => context.signal.addEventListener('abort', resolve, { once: true }))
      },
      async cancel (context) { seen.push(context.metadata) }
    }
    const owner = await cluster.start({ options: { executor: recording } })
    const task = await hold(owner.endpoint)
    const metadata = { reason: 'from B', n: 2 }
    t.equal((await result(b.endpoint, 'CancelTask', { id: task.id, metadata })).status.state, 'TASK_STATE_CANCELED')
    t.same(seen, [metadata])
  })

  t.test('CancelTask on the instance running the task stays local', async t => {
    const task = await hold(b.endpoint)
    t.equal((await result(b.endpoint, 'CancelTask', { id: task.id })).status.state, 'TASK_STATE_CANCELED')
    t.equal(b.fastify.a2a.handler.runningExecutions, 0)
  })

  t.test('an owner that never confirms: Unavailable after cancelTimeout, the task still running', async t => {
    let release = () => {}
    const released = new Promise<void>(resolve => { release = resolve })
    t.teardown(() => release())
    // Ignores its aborted signal, and its cancel hook never returns.
    const stubborn: AgentExecutor = {
      async execute (context, events) {
        if (context.message.parts[0]?.text !== 'hold') return await conformanceAgent.execute(context, events)
        await events.working()
        await released
      },
      cancel: () => released
    }
    const owner = await cluster.start({ options: { executor: stubborn } })
    const asking = await cluster.start({ cluster: { cancelTimeout: 300 } })
    const task = await hold(owner.endpoint)
    const reply = await call(asking.endpoint, 'CancelTask', { id: task.id })
    t.equal(reply.error.code, -32603)
    t.match(reply.error.message, `the instance running task ${task.id} did not confirm the cancel within 300 ms`)
    t.equal((await result(asking.endpoint, 'GetTask', { id: task.id })).status.state, 'TASK_STATE_WORKING')
  })

  /** The bus, but its subscriptions are never acknowledged (`ready()` never resolves), as with Redis stalled. */
  const unready = (bus: EventBus): EventBus => ({
    publish: bus.publish.bind(bus),
    subscribe: bus.subscribe.bind(bus),
    listenerCount: bus.listenerCount.bind(bus),
    ready: async () => { await new Promise(() => {}) },
    command: bus.command?.bind(bus),
    onCommand: bus.onCommand?.bind(bus)
  })

  t.test('the asking instance\'s bus never acknowledges its subscription: CancelTask answers within cancelTimeout all the same', async t => {
    const asking = await cluster.start({ cluster: { cancelTimeout: 300 }, wrapBus: unready })
    const task = await hold(a.endpoint)
    const started = Date.now()
    const reply = await Promise.race([call(asking.endpoint, 'CancelTask', { id: task.id }), new Promise(resolve => setTimeout(resolve, 5000, 'no answer'))]) as any
    t.not(reply, 'no answer')
    t.match(reply.error, { code: -32603, message: `Service unavailable: the instance running task ${task.id as string} did not confirm the cancel within 300 ms` })
    t.ok(Date.now() - started < 2000, `within cancelTimeout and some slack (${Date.now() - started} ms)`)
    await result(a.endpoint, 'CancelTask', { id: task.id })
  })

  t.test('the asking instance\'s bus never acknowledges its subscription: past busReadyTimeout the cancel is sent, and confirmed through the store', async t => {
    const asking = await cluster.start({ options: { busReadyTimeout: 100 }, cluster: { cancelTimeout: 5000, heartbeatInterval: 200 }, wrapBus: unready })
    const task = await hold(a.endpoint)
    const reply = await Promise.race([call(asking.endpoint, 'CancelTask', { id: task.id }), new Promise(resolve => setTimeout(resolve, 4000, 'no answer'))]) as any
    t.equal(reply.result?.status.state, 'TASK_STATE_CANCELED')
  })

  t.test('the owner completes the task instead (its cancel hook): -32002 TaskNotCancelable, as on one instance', async t => {
    const completing: AgentExecutor = {
      async execute (context, events) {
        await events.working()
        await new Promise(resolve => context.signal.addEventListener('abort', resolve, { once: true }))
      },
      async cancel (_context, events) {
        await events.completed()
      }
    }
    const owner = await cluster.start({ options: { executor: completing } })
    const task = await hold(owner.endpoint)
    const { error } = await call(b.endpoint, 'CancelTask', { id: task.id })
    t.same(error, {
      code: -32002,
      message: `Task cannot be canceled: ${task.id}`,
      data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_CANCELABLE', domain: 'a2a-protocol.org', metadata: { taskId: task.id, state: 'TASK_STATE_COMPLETED' } }]
    })
    t.equal((await result(b.endpoint, 'GetTask', { id: task.id })).status.state, 'TASK_STATE_COMPLETED')
  })

  t.test('CancelTask on the instance holding the lease for a turn not yet running: canceled there once it runs', async t => {
    // The turn's messageId is recorded after the lease is taken and before its execution exists: held there.
    let entered = () => {}
    const reachedGate = new Promise<void>(resolve => { entered = resolve })
    let open = () => {}
    const gate = new Promise<void>(resolve => { open = resolve })
    t.teardown(() => open())
    let looked = () => {}
    const lookedForOwners = new Promise<void>(resolve => { looked = resolve })
    let gated: string | undefined
    // The conformance agent completes a task waiting for input: here `hold` holds it, as on a new task.
    const holding: AgentExecutor = {
      async execute (context, events) {
        if (context.message.parts[0]?.text !== 'hold') return await conformanceAgent.execute(context, events)
        await events.working()
        await new Promise(resolve => context.signal.addEventListener('abort', resolve, { once: true }))
      }
    }
    const starting = await cluster.start({
      options: { executor: holding },
      wrapStore: (store: ClusterStore) => overrideStore(store, {
        async claimMessage (tenant, messageId, taskId) {
          if (messageId === gated) {
            entered()
            await gate
          }
          return await store.claimMessage(tenant, messageId, taskId)
        },
        async owners (key) {
          looked()
          return await store.owners(key)
        }
      })
    })
    const { task } = await result(starting.endpoint, 'SendMessage', { message: userMessage('input') })
    t.equal(task.status.state, 'TASK_STATE_INPUT_REQUIRED')
    const message = userMessage('hold', { taskId: task.id })
    gated = message.messageId
    const sending = call(starting.endpoint, 'SendMessage', { message, configuration: { returnImmediately: true } })
    await reachedGate
    t.same(await cluster.leases(task.id), [starting.member.instanceId], 'the turn holds the lease')
    const canceling = call(starting.endpoint, 'CancelTask', { id: task.id })
    await lookedForOwners
    open()
    await sending
    const reply = await canceling
    t.equal(reply.result?.status.state, 'TASK_STATE_CANCELED', 'canceled by this instance, long before cancelTimeout')
    await eventually(() => starting.fastify.a2a.handler.runningExecutions === 0)
    t.equal((await result(b.endpoint, 'GetTask', { id: task.id })).status.state, 'TASK_STATE_CANCELED')
  })

  t.test('the owner died: once its lease lapsed, B claims the task and cancels it itself', async t => {
    // A cluster of two whose B never sweeps, so only its CancelTask can take the task.
    const pair = await testCluster(t) as TestCluster
    const noSweep = (store: ClusterStore) => overrideStore(store, { orphans: async () => [] })
    const owner = await pair.start()
    const asking = await pair.start({ wrapStore: noSweep })
    const task = await hold(owner.endpoint)
    await owner.cutOff()
    const canceled = await result(asking.endpoint, 'CancelTask', { id: task.id })
    t.equal(canceled.status.state, 'TASK_STATE_CANCELED')
    t.equal((await result(asking.endpoint, 'GetTask', { id: task.id })).status.state, 'TASK_STATE_CANCELED')
    await eventually(async () => (await pair.leases(task.id)).length === 0)
    t.pass('the claimed lease is given back')
  })
}
