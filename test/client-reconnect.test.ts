// The reconnect helper: its delays (1 s doubling to the 30 s cap, less the jitter; the
// waits injected, so no test sleeps them), and what it retries, decided on real answers:
// the plugin's 401 / 403 / 429 / 503 at the upgrade, 200 / 404 / 502 pages from a server
// that is no WebSocket endpoint, a subprotocol mismatch, close codes; then resumeStream
// picking a cut stream up with SubscribeToTask.
import { getEventListeners } from 'node:events'
import t from 'tap'
import {
  A2AClient, A2AClientError, ConnectionError, JsonRpcTransport, StreamIncompleteError, SubprotocolMismatchError, UnexpectedStatusError, WebSocketTransport,
  isReconnectable, reconnect, reconnectDelay, resumeStream, type ReconnectOptions, type StreamResponse
} from '../lib/client/index.js'
import { errorFromRest } from '../lib/client/errors.js'
import { eventually, startServer, userMessage } from './helpers/server.js'
import { processWarnings } from './helpers/logs.js'
import { closingPeer, statusPeer } from './helpers/ws-peers.js'

/** Options whose waits are recorded instead of slept; no jitter unless `random` is given. */
function recorded (options: ReconnectOptions = {}) {
  const delays: number[] = []
  return { delays, options: { random: () => 0, ...options, sleep: async (ms: number) => { delays.push(ms); await options.sleep?.(ms) } } }
}

/** Runs `operation` under reconnect: how many attempts it took, and how it ended. */
async function attempts (operation: () => Promise<unknown>, options: ReconnectOptions = { maxAttempts: 3 }) {
  let made = 0
  const { delays, options: withWaits } = recorded(options)
  const outcome = await reconnect(() => { made++; return operation() }, withWaits).then(value => ({ value }), (error: unknown) => ({ error }))
  return { made, delays, ...outcome } as { made: number, delays: number[], value?: unknown, error?: any }
}

const v1 = (url: string, options: Partial<ConstructorParameters<typeof WebSocketTransport>[0]> = {}) => new WebSocketTransport({ url, dialect: 'a2a.v1', ...options })
const wsOf = (origin: string) => origin.replace('http', 'ws')

t.test('the delays: 1 s doubling to a 30 s cap, less up to `jitter` of each at random', async t => {
  const retries = [1, 2, 3, 4, 5, 6, 7, 8]
  t.same(retries.map(retry => reconnectDelay(retry, { random: () => 0 })), [1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000])
  t.same(retries.map(retry => reconnectDelay(retry, { random: () => 1 })), [500, 1000, 2000, 4000, 8000, 15000, 15000, 15000], 'jitter 0.5 by default')
  t.same([1, 2, 3].map(retry => reconnectDelay(retry, { initialDelay: 100, maxDelay: 250, jitter: 0.2, random: () => 0.5 })), [90, 180, 225])
  for (let retry = 1; retry <= 8; retry++) {
    const delay = reconnectDelay(retry)
    const full = Math.min(30_000, 1000 * 2 ** (retry - 1))
    t.ok(delay > full / 2 && delay <= full, `retry ${retry}: ${delay} within (${full / 2}, ${full}]`)
  }
  t.throws(() => reconnectDelay(1, { initialDelay: 0 }), new RangeError('reconnect option initialDelay must be a positive number of ms; got 0'))
  t.throws(() => reconnectDelay(1, { initialDelay: 2000, maxDelay: 1000 }), new RangeError('reconnect option maxDelay must be a number of ms no less than initialDelay (2000); got 1000'))
  t.throws(() => reconnectDelay(1, { maxAttempts: 0 }), new RangeError('reconnect option maxAttempts must be an integer of at least 1, or Infinity; got 0'))
  t.throws(() => reconnectDelay(1, { jitter: 2 }), new RangeError('reconnect option jitter must be between 0 and 1; got 2'))
})

t.test('reconnect waits those delays between attempts and gives up after maxAttempts with the last error', async t => {
  const failures = Array.from({ length: 8 }, (_, i) => new ConnectionError(`failure ${i + 1}`))
  const told: Array<[string, number, number]> = []
  const run = await attempts(() => Promise.reject(failures.shift()), {
    maxAttempts: 8, onRetry: (error, retry, delay) => told.push([(error as Error).message, retry, delay])
  })
  t.equal(run.made, 8)
  t.same(run.delays, [1000, 2000, 4000, 8000, 16000, 30000, 30000])
  t.equal(run.error.message, 'failure 8')
  t.same(told.slice(0, 2), [['failure 1', 1, 1000], ['failure 2', 2, 2000]])

  let tries = 0
  const succeeds = await attempts(async () => { if (++tries < 3) throw new ConnectionError('not yet'); return 'done' }, { maxAttempts: Infinity })
  t.same([succeeds.made, succeeds.value, succeeds.delays], [3, 'done', [1000, 2000]])

  const asked = new A2AClientError(-32000, 'Too many concurrent streams', [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '5s' }])
  t.same((await attempts(() => Promise.reject(asked), { maxAttempts: 2 })).delays, [5000], "an agent's RetryInfo is waited at least")
})

t.test('an abort stops the waiting and the retrying with its reason', async t => {
  const controller = new AbortController()
  const stopped = reconnect(() => Promise.reject(new ConnectionError('down')), { signal: controller.signal, onRetry: () => controller.abort(new Error('enough')) })
  await t.rejects(stopped, { message: 'enough' }, 'the default wait, a timer, ends at the abort')
  await t.rejects(reconnect(async () => 'never run', { signal: controller.signal }), { message: 'enough' })
})

t.test('twelve loops waiting on one signal: one listener on it, no MaxListeners warning; its abort stops them all', async t => {
  const warnings = processWarnings(t)
  const controller = new AbortController()
  let waiting = 0
  const allWaiting = new Promise<void>(resolve => {
    const onRetry = () => { if (++waiting === 12) setImmediate(resolve) }
    Array.from({ length: 12 }, () => reconnect(() => Promise.reject(new ConnectionError('down')), { signal: controller.signal, onRetry }))
      .forEach(loop => t.rejects(loop, { message: 'enough' }))
  })
  await allWaiting
  t.equal(getEventListeners(controller.signal, 'abort').length, 1, 'one listener for the twelve waits')
  controller.abort(new Error('enough'))
  await new Promise(resolve => setImmediate(resolve))
  t.same(warnings, [], 'no warning')
})

t.test('the upgrade answers of the plugin: 401 and 403 are not retried; 429 and the 503 of the connection cap are', async t => {
  const guarded = await startServer({ auth: { bearer: { tokens: ['token-1'] } } })
  const strict = await startServer({ websocket: { allowedOrigins: ['https://ok.example'] } })
  const limited = await startServer({ rateLimit: { max: 1, timeWindow: 60_000 } })
  const capped = await startServer({ websocket: { maxConnections: 1 } })
  t.teardown(() => Promise.all([guarded, strict, limited, capped].map(server => server.close())))

  const unauthenticated = await attempts(() => v1(wsOf(guarded.origin)).connect())
  t.match(unauthenticated, { made: 1, error: { name: 'UnexpectedStatusError', status: 401 } })
  const forbidden = await attempts(() => v1(wsOf(strict.origin), { serviceParams: { Origin: 'https://evil.example' } }).connect())
  t.match(forbidden, { made: 1, error: { name: 'UnexpectedStatusError', status: 403 } })

  const first = v1(wsOf(limited.origin))
  t.teardown(() => first.close())
  await first.connect()
  const tooMany = await attempts(() => v1(wsOf(limited.origin)).connect())
  t.match(tooMany, { made: 3, delays: [1000, 2000], error: { name: 'UnexpectedStatusError', status: 429 } })

  const holder = v1(wsOf(capped.origin))
  await holder.connect()
  const waiting = v1(wsOf(capped.origin))
  t.teardown(() => waiting.close())
  // The slot frees up during the second wait: a later attempt gets in.
  const full = await attempts(() => waiting.connect(), { maxAttempts: 10, sleep: async (ms) => { if (ms === 2000) await holder.close() } })
  t.equal(full.error, undefined)
  t.ok(full.made >= 3, `in after ${full.made} attempts`)
  t.same(full.delays.slice(0, 2), [1000, 2000])
})

t.test('an endpoint that is no WebSocket: its 200 and 404 pages are not retried, a gateway\'s 502 is', async t => {
  const pages = await statusPeer()
  t.teardown(() => pages.close())
  for (const [status, made] of [[200, 1], [404, 1], [502, 3]] as const) {
    const run = await attempts(() => v1(`${pages.url}/${status}`).connect())
    t.match(run, { made, error: { name: 'UnexpectedStatusError', status } }, `${status}`)
    t.match(run.error.body, /^<!doctype html>/, `${status}`)
  }
})

t.test('a subprotocol mismatch is not retried', async t => {
  const seedOnly = await startServer({ websocket: { a2aV1: { enabled: false } } })
  t.teardown(() => seedOnly.close())
  const run = await attempts(() => v1(wsOf(seedOnly.origin)).connect())
  t.equal(run.made, 1)
  t.type(run.error, SubprotocolMismatchError)
})

t.test('close codes: 1001, 1008, 1011 and 1013 are retried; 4000, 4001 and 4002 are not', async t => {
  const peer = await closingPeer()
  t.teardown(() => peer.close())
  for (const [code, made] of [[1001, 2], [1008, 2], [1011, 2], [1013, 2], [4000, 1], [4001, 1], [4002, 1]] as const) {
    const client = new A2AClient(v1(`${peer.url}/${code}`))
    const run = await attempts(() => client.getTask({ id: 'x' }), { maxAttempts: 2 })
    t.match(run, { made, error: { closeCode: code } }, `${code}`)
    await client.close()
  }

  // The plugin's own 1013, when the message budget cannot be checked: the call refused with
  // a RetryInfo is retried after it, the call cut by the close after the backoff.
  const failing = await startServer({ websocket: { a2aV1: { rateLimit: { store: { incr (_key, callback) { callback(new Error('the store is down')) } } } } } })
  t.teardown(() => failing.close())
  const client = new A2AClient(v1(wsOf(failing.origin)))
  t.teardown(() => client.close())
  const first: unknown[] = []
  const runs = await Promise.all([0, 1].map(() => attempts(() => client.getTask({ id: 'x' }), {
    maxAttempts: 2, initialDelay: 100, onRetry: (error) => first.push(error)
  })))
  t.match(first, [{ name: 'A2AClientError', code: -32603, retryDelayMs: 1000 }, { name: 'ConnectionError', closeCode: 1013 }])
  t.match(runs, [{ made: 2, delays: [1000] }, { made: 2, delays: [100] }])
})

t.test('isReconnectable: what a new attempt may get past', async t => {
  t.ok(isReconnectable(new UnexpectedStatusError(504, 'Gateway Timeout')))
  t.ok(isReconnectable(new UnexpectedStatusError(429, undefined)))
  t.notOk(isReconnectable(new UnexpectedStatusError(401, undefined)))
  const rest = (status: number, grpc: string) => errorFromRest(status, { error: { code: status, status: grpc, message: 'no RetryInfo' } })
  t.ok(isReconnectable(rest(503, 'UNAVAILABLE')), 'an HTTP+JSON 503 with an error body and no RetryInfo')
  t.ok(isReconnectable(rest(500, 'INTERNAL')), 'any 5xx over HTTP')
  t.ok(isReconnectable(rest(429, 'RESOURCE_EXHAUSTED')))
  t.notOk(isReconnectable(rest(400, 'FAILED_PRECONDITION')))
  t.notOk(isReconnectable(new A2AClientError(-32603, 'over WebSocket, no HTTP status', [])))
  t.notOk(isReconnectable(new DOMException('stopped', 'AbortError')))
  t.notOk(isReconnectable(new TypeError('a bug')))
})

t.test('resumeStream picks a cut stream up with SubscribeToTask after the backoff, through a refused resubscription', async t => {
  const capped = await startServer({ websocket: { maxConnections: 1 } })
  t.teardown(() => capped.close())
  const other = new A2AClient(new JsonRpcTransport({ url: capped.endpoint }))
  const client = new A2AClient(v1(wsOf(capped.origin)))
  t.teardown(() => client.close())
  const blocker = v1(wsOf(capped.origin))
  const { delays, options } = recorded({
    // During the first wait another connection takes the one slot (the resubscription gets
    // a 503); during the second it leaves.
    async sleep () {
      if (delays.length === 1) await eventually(() => blocker.connect().then(() => true, () => false))
      if (delays.length === 2) await blocker.close()
    }
  })
  const states: string[] = []
  for await (const event of resumeStream(client.sendStreamingMessage({ message: userMessage('hold') }), id => client.resubscribe(id), options)) {
    const state = (event.task?.status ?? event.statusUpdate?.status)?.state
    states.push(`${event.task === undefined ? 'status' : 'task'} ${state}`)
    if (states.length === 2) for (const socket of capped.fastify.websocketServer.clients) socket.terminate()
    if (states.length === 3) await other.cancelTask({ id: event.task!.id })
  }
  t.same(states, ['task TASK_STATE_SUBMITTED', 'status TASK_STATE_WORKING', 'task TASK_STATE_WORKING', 'status TASK_STATE_CANCELED'])
  // The slot may take a moment more to free up on the server: then a third wait, twice as long again.
  t.same(delays.slice(0, 2), [1000, 2000], 'the wait grew after the refused resubscription')
  t.same(delays.slice(2), delays.slice(2).map((_, i) => 4000 * 2 ** i))
})

t.test('resumeStream throws a failure before the task is named, and one not worth retrying, as they are', async t => {
  const valid = new Set(['token-1', 'token-2'])
  const capped = await startServer({ websocket: { maxConnections: 1 }, auth: { bearer: { verify: (token) => valid.has(token) ? { subject: token } : undefined } } })
  t.teardown(() => capped.close())
  const credential = { serviceParams: { Authorization: 'Bearer token-1' } }
  const holder = new A2AClient(v1(wsOf(capped.origin), credential))
  t.teardown(() => holder.close())
  let resubscribed = 0
  const resubscribe = (id: string) => {
    resubscribed++
    return holder.resubscribe(id)
  }
  const events = holder.sendStreamingMessage({ message: userMessage('hold') })
  const refused = resumeStream(new A2AClient(v1(wsOf(capped.origin), credential)).sendStreamingMessage({ message: userMessage('hold') }), resubscribe, recorded().options)
  await t.rejects(refused.next(), { name: 'UnexpectedStatusError', status: 503 }, 'sending the message again could start a second task')

  const resumed = resumeStream(events, resubscribe, recorded().options)
  const task = (await resumed.next()).value as StreamResponse
  t.equal((await resumed.next()).value?.statusUpdate?.status.state, 'TASK_STATE_WORKING')
  valid.delete('token-1')
  await t.rejects(holder.getTask({ id: task.task!.id }), { name: 'UnexpectedStatusError', status: 401 })
  await t.rejects(resumed.next(), { name: 'AuthenticationRequiredError', closeCode: 4001 }, 'a close after which the task is known, but not worth retrying')
  t.equal(resubscribed, 0)
  await new A2AClient(new JsonRpcTransport({ url: capped.endpoint, serviceParams: { Authorization: 'Bearer token-2' } })).cancelTask({ id: task.task!.id })
})

t.test('resumeStream with getTask: a task that ended during the cut ends the stream as stored, not with the refused resubscription', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  const other = new A2AClient(new JsonRpcTransport({ url: server.endpoint }))
  const client = new A2AClient(v1(wsOf(server.origin)))
  t.teardown(() => client.close())
  const events: StreamResponse[] = []
  // During the wait another client cancels the task: the resubscription is refused (-32004).
  const { delays, options } = recorded({ async sleep () { await other.cancelTask({ id: events[0]!.task!.id }) } })
  const getTask = (id: string) => other.getTask({ id })
  for await (const event of resumeStream(client.sendStreamingMessage({ message: userMessage('hold') }), id => client.resubscribe(id), { ...options, getTask })) {
    events.push(event)
    if (events.length === 2) for (const socket of server.fastify.websocketServer.clients) socket.terminate()
  }
  const taskId = events[0]!.task!.id
  t.same(events.slice(1), [
    { statusUpdate: { taskId, contextId: events[0]!.task!.contextId, status: events[1]!.statusUpdate!.status } },
    { task: await other.getTask({ id: taskId }) }
  ], 'WORKING, then the task as stored, CANCELED')
  t.equal(events[2]!.task!.status.state, 'TASK_STATE_CANCELED')
  t.same(delays, [1000], 'one wait, before the refused resubscription')
})

t.test('resumeStream with getTask: a refusal while the task still runs is thrown as it is', async t => {
  const refusal = new A2AClientError(-32004, 'Unsupported operation: streaming', [])
  async function * cut () {
    yield { task: { id: 't1', contextId: 'c', status: { state: 'TASK_STATE_WORKING' as const } } }
    throw new StreamIncompleteError('cut', 't1', 1)
  }
  async function * refused (): AsyncGenerator<StreamResponse> { throw refusal }
  let read = 0
  const getTask = async (id: string) => { read++; return { id, contextId: 'c', status: { state: 'TASK_STATE_WORKING' as const } } }
  const resumed = resumeStream(cut(), refused, { ...recorded().options, getTask })
  t.same((await resumed.next()).value, { task: { id: 't1', contextId: 'c', status: { state: 'TASK_STATE_WORKING' } } })
  await t.rejects(resumed.next(), refusal)
  t.equal(read, 1, 'the task was read once, and is still running')
})
