// One table of scenarios run over every binding, in the spirit of the upstream TCK's
// BIND-EQUIV checks: every binding offers the same operations, gives the same task
// states, artifacts, history and message parts, and answers the same error with the same
// ErrorInfo reason under its own code (JSON-RPC code; HTTP status and status name).
// Each scenario's expectation is one value for all bindings but the codes, so a binding
// that differs from another fails against it. A binding is one driver: adding one
// (WebSocket) is adding a `BindingDriver` to `drivers`.
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { errorTable, type ErrorName, type ErrorRow, type FieldViolation } from '../lib/index.js'
import { A2A_JSON, rest, restRequest, restStream } from './helpers/rest.js'
import { eventually, post, startServer, stream, userMessage, V1 } from './helpers/server.js'
import { connect, refusedUpgrade, wsUrl } from './helpers/ws.js'

/** An error as any binding reports it. */
interface Failure {
  ok: false
  /** JSON-RPC "method not found", or an HTTP 404 without ErrorInfo: the binding does not offer the call. */
  notOffered: boolean
  reason: string | null
  fieldViolations?: FieldViolation[]
  /** The binding's own code, as `BindingDriver.codeOf` gives it for a row of the table. */
  code: unknown
}
type Outcome = { ok: true, result: any } | Failure
/** A stream that started (with its events, and the error that ended it if one did), or the error before it. */
type StreamOutcome = { ok: true, events: any[], failure?: Failure } | Failure

interface BindingClient {
  call (method: string, params: Record<string, unknown>): Promise<Outcome>
  stream (method: 'SendStreamingMessage' | 'SubscribeToTask', params: Record<string, unknown>): Promise<StreamOutcome>
  close (): Promise<void>
}

interface BindingDriver {
  name: string
  /** A client whose every call carries `headers` as service parameters (a WebSocket client sends them once, at the upgrade). */
  connect (headers: Record<string, string>): Promise<BindingClient>
  codeOf (row: ErrorRow): unknown
  /** Where the binding checks the version at its handshake (WebSocket), the code of a refused handshake. */
  handshakeCodeOf? (row: ErrorRow): unknown
}

function failure (details: any[] | undefined, code: unknown, notOffered: (reason: string | null) => boolean): Failure {
  const reason = details?.find(detail => detail['@type'] === 'type.googleapis.com/google.rpc.ErrorInfo')?.reason ?? null
  const badRequest = details?.find(detail => detail['@type'] === 'type.googleapis.com/google.rpc.BadRequest')
  const result: Failure = { ok: false, notOffered: notOffered(reason), reason, code }
  if (badRequest !== undefined) result.fieldViolations = badRequest.fieldViolations
  return result
}

const server = await startServer({ prefix: '/a2a' })
t.teardown(() => server.close())
const bus = server.fastify.a2a.bus

function jsonRpcDriver (url: string): BindingDriver {
  const fromError = (error: any) => failure(error.data, error.code, () => error.code === -32601)
  let id = 0
  return {
    name: 'JSONRPC',
    codeOf: row => row.jsonRpcCode,
    async connect (headers) {
      return {
        async call (method, params) {
          const { body } = await post(url, { jsonrpc: '2.0', id: ++id, method, params }, headers)
          return body.error === undefined ? { ok: true, result: body.result } : fromError(body.error)
        },
        async stream (method, params) {
          const reply = await stream(url, method, params, headers)
          if (reply.body !== undefined) return fromError(reply.body.error)
          const events = reply.events.filter(event => event.event === undefined).map(event => event.data.result)
          const last = reply.events.at(-1)
          return last?.event === 'error' ? { ok: true, events, failure: fromError(last.data.error) } : { ok: true, events }
        },
        async close () {}
      }
    }
  }
}

function restDriver (base: string): BindingDriver {
  const fromBody = (http: number, body: any) =>
    failure(body?.error?.details, { http, body: { code: body?.error?.code, status: body?.error?.status } }, reason => http === 404 && reason === null)
  return {
    name: 'HTTP+JSON',
    codeOf: row => ({ http: row.httpStatus, body: { code: row.httpStatus, status: row.grpcStatus } }),
    async connect (headers) {
      const options = (body: Record<string, unknown> | undefined) => body === undefined ? { headers } : { body, headers: { ...headers, 'content-type': A2A_JSON } }
      return {
        async call (method, params) {
          const request = restRequest(method, params)
          const reply = await rest(base, request.method, request.path, options(request.body))
          return reply.status === 200 ? { ok: true, result: reply.body } : fromBody(reply.status, reply.body)
        },
        async stream (method, params) {
          const request = restRequest(method, params)
          const reply = await restStream(base, request.method, request.path, options(request.body))
          if (reply.events.length === 0) return fromBody(reply.status, reply.body)
          const events = reply.events.filter(event => event.event === undefined).map(event => event.data)
          const last = reply.events.at(-1)
          return last?.event === 'error' ? { ok: true, events, failure: fromBody(reply.status, last.data) } : { ok: true, events }
        },
        async close () {}
      }
    }
  }
}

/**
 * The WebSocket binding carries the JSON-RPC messages, so its codes are JSON-RPC codes;
 * its service parameters are the upgrade's headers, so a bad version refuses the upgrade
 * itself with the HTTP+JSON error body, and every call of that client reports it.
 */
function webSocketDriver (origin: string): BindingDriver {
  const fromError = (error: any) => failure(error.data, error.code, () => error.code === -32601)
  const url = wsUrl(origin, '/a2a', '')
  return {
    name: 'WEBSOCKET',
    codeOf: row => row.jsonRpcCode,
    handshakeCodeOf: row => ({ http: row.httpStatus, body: { code: row.httpStatus, status: row.grpcStatus } }),
    async connect (headers) {
      const client = await connect(url, { headers }).catch(async () => {
        const refused = await refusedUpgrade(url, { headers })
        return failure(refused.body.error.details, { http: refused.status, body: { code: refused.body.error.code, status: refused.body.error.status } }, () => false)
      })
      if (!('socket' in client)) return { call: async () => client, stream: async () => client, close: async () => {} }
      return {
        async call (method, params) {
          const frame = await client.request(method, params)
          return frame.error === undefined ? { ok: true, result: frame.result } : fromError(frame.error)
        },
        async stream (method, params) {
          const frames = await client.stream(method, params)
          const last = frames.at(-1)
          if (frames.length === 1 && last.error !== undefined) return fromError(last.error)
          const events = frames.filter(frame => frame.error === undefined && frame.result.status !== 'stream_complete').map(frame => frame.result)
          return last.error !== undefined ? { ok: true, events, failure: fromError(last.error) } : { ok: true, events }
        },
        async close () {
          client.close()
          await client.closed
        }
      }
    }
  }
}

const drivers: BindingDriver[] = [jsonRpcDriver(server.endpoint), restDriver(server.endpoint), webSocketDriver(server.origin)]

// ---- views: what must be the same on every binding ----------------------------------

const messageView = (message: any) => ({ role: message.role, parts: message.parts })

function taskView (task: any) {
  const view: Record<string, unknown> = { state: task.status.state }
  if (task.status.message !== undefined) view.statusMessage = messageView(task.status.message)
  view.artifacts = (task.artifacts ?? []).map((artifact: any) => ({ artifactId: artifact.artifactId, parts: artifact.parts }))
  view.history = (task.history ?? []).map(messageView)
  return view
}

const sendView = (result: any) => result.task !== undefined ? { task: taskView(result.task) } : { message: messageView(result.message) }

function eventView (event: any) {
  if (event.task !== undefined) return { task: event.task.status.state }
  if (event.message !== undefined) return { message: messageView(event.message) }
  if (event.statusUpdate !== undefined) return { status: event.statusUpdate.status.state }
  const { artifact, append, lastChunk } = event.artifactUpdate
  return { artifact: artifact.artifactId, parts: artifact.parts, append: append === true, lastChunk: lastChunk === true }
}

function errorView (outcome: Failure) {
  const view: Record<string, unknown> = { reason: outcome.reason, code: outcome.code }
  if (outcome.fieldViolations !== undefined) view.fieldViolations = outcome.fieldViolations
  return { error: view }
}

const view = (outcome: Outcome, of: (result: any) => unknown = result => result) => outcome.ok ? of(outcome.result) : errorView(outcome)

function streamView (outcome: StreamOutcome) {
  if (!outcome.ok) return errorView(outcome)
  const events = outcome.events.map(eventView)
  return outcome.failure === undefined ? { events } : { events, ...errorView(outcome.failure) }
}

function expectedError (driver: BindingDriver, name: ErrorName, fieldViolations?: FieldViolation[]) {
  const row: ErrorRow = errorTable[name]
  const atHandshake = name === 'VersionNotSupported' && driver.handshakeCodeOf !== undefined
  const error: Record<string, unknown> = { reason: row.reason ?? null, code: atHandshake ? driver.handshakeCodeOf?.(row) : driver.codeOf(row) }
  if (fieldViolations !== undefined) error.fieldViolations = fieldViolations
  return { error }
}

// ---- scenarios ----------------------------------------------------------------------

async function sent (client: BindingClient, text: string, extra = {}, configuration?: object): Promise<any> {
  const params = configuration === undefined ? { message: userMessage(text, extra) } : { message: userMessage(text, extra), configuration }
  const outcome = await client.call('SendMessage', params)
  if (!outcome.ok) throw new Error(`SendMessage ${text} failed: ${JSON.stringify(outcome)}`)
  return outcome.result
}

const user = (text: string) => ({ role: 'ROLE_USER', parts: [{ text }] })
const agent = (text: string) => ({ role: 'ROLE_AGENT', parts: [{ text }] })

interface Scenario {
  name: string
  /** The client's service parameters; A2A-Version 1.0 when absent. */
  headers?: Record<string, string>
  run (client: BindingClient): Promise<unknown>
  expect (driver: BindingDriver): unknown
}

const offered: Array<[string, 'call' | 'stream', Record<string, unknown>]> = [
  ['SendMessage', 'call', { message: userMessage('message offered') }],
  ['SendStreamingMessage', 'stream', { message: userMessage('message offered') }],
  ['GetTask', 'call', { id: 'missing' }],
  ['ListTasks', 'call', {}],
  ['CancelTask', 'call', { id: 'missing' }],
  ['SubscribeToTask', 'stream', { id: 'missing' }],
  ['CreateTaskPushNotificationConfig', 'call', { taskId: 'missing', url: 'https://hooks.example.com/a2a' }],
  ['GetTaskPushNotificationConfig', 'call', { taskId: 'missing', id: 'missing' }],
  ['ListTaskPushNotificationConfigs', 'call', { taskId: 'missing' }],
  ['DeleteTaskPushNotificationConfig', 'call', { taskId: 'missing', id: 'missing' }],
  ['GetExtendedAgentCard', 'call', {}],
  // v0.3 names: the control that "not offered" is seen at all.
  ['message/send', 'call', { message: userMessage('hello') }],
  ['tasks/get', 'call', { id: 'missing' }]
]

const scenarios: Scenario[] = [
  {
    name: 'the same operations are offered',
    async run (client) {
      const seen: Record<string, boolean> = {}
      for (const [method, kind, params] of offered) {
        const outcome = kind === 'call' ? await client.call(method, params) : await client.stream(method as 'SubscribeToTask', params)
        seen[method] = outcome.ok || !outcome.notOffered
      }
      return seen
    },
    expect: () => Object.fromEntries(offered.map(([method]) => [method, !method.includes('/')]))
  },
  {
    name: 'echo',
    async run (client) {
      const result = await sent(client, 'hello')
      return { sent: sendView(result), fetched: view(await client.call('GetTask', { id: result.task.id }), taskView) }
    },
    expect () {
      const task = { state: 'TASK_STATE_COMPLETED', artifacts: [{ artifactId: 'echo', parts: [{ text: 'hello' }] }], history: [user('hello')] }
      return { sent: { task }, fetched: task }
    }
  },
  {
    name: 'message reply',
    run: async client => sendView(await sent(client, 'message hi')),
    expect: () => ({ message: agent('hi') })
  },
  {
    name: 'stream N',
    run: async client => streamView(await client.stream('SendStreamingMessage', { message: userMessage('stream 3') })),
    expect: () => ({
      events: [
        { task: 'TASK_STATE_SUBMITTED' },
        { status: 'TASK_STATE_WORKING' },
        { artifact: 'stream', parts: [{ text: 'chunk 1' }], append: false, lastChunk: false },
        { artifact: 'stream', parts: [{ text: 'chunk 2' }], append: true, lastChunk: false },
        { artifact: 'stream', parts: [{ text: 'chunk 3' }], append: true, lastChunk: true },
        { status: 'TASK_STATE_COMPLETED' }
      ]
    })
  },
  {
    name: 'hold + cancel, followed by a subscription',
    async run (client) {
      const { task } = await sent(client, 'hold', {}, { returnImmediately: true })
      await eventually(async () => {
        const current = await client.call('GetTask', { id: task.id })
        return current.ok && current.result.status.state === 'TASK_STATE_WORKING'
      })
      const subscription = client.stream('SubscribeToTask', { id: task.id })
      await eventually(() => bus.listenerCount() === 1)
      const canceled = view(await client.call('CancelTask', { id: task.id }), taskView)
      return { canceled, subscription: streamView(await subscription), fetched: view(await client.call('GetTask', { id: task.id }), taskView) }
    },
    expect () {
      const task = { state: 'TASK_STATE_CANCELED', artifacts: [], history: [user('hold')] }
      return { canceled: task, subscription: { events: [{ task: 'TASK_STATE_WORKING' }, { status: 'TASK_STATE_CANCELED' }] }, fetched: task }
    }
  },
  {
    name: 'input-required + resume',
    async run (client) {
      const waiting = await sent(client, 'input')
      return { waiting: sendView(waiting), resumed: sendView(await sent(client, 'more', { taskId: waiting.task.id })) }
    },
    expect: () => ({
      waiting: { task: { state: 'TASK_STATE_INPUT_REQUIRED', statusMessage: agent('need input'), artifacts: [], history: [user('input'), agent('need input')] } },
      resumed: { task: { state: 'TASK_STATE_COMPLETED', artifacts: [{ artifactId: 'echo', parts: [{ text: 'more' }] }], history: [user('input'), agent('need input'), user('more')] } }
    })
  },
  {
    name: 'fail',
    run: async client => sendView(await sent(client, 'fail')),
    expect: () => ({ task: { state: 'TASK_STATE_FAILED', statusMessage: agent('failed on purpose'), artifacts: [], history: [user('fail'), agent('failed on purpose')] } })
  },
  {
    name: 'reject',
    run: async client => sendView(await sent(client, 'reject')),
    expect: () => ({ task: { state: 'TASK_STATE_REJECTED', artifacts: [], history: [user('reject')] } })
  },
  {
    name: 'get unknown',
    run: async client => view(await client.call('GetTask', { id: `no-such-task-${randomUUID()}` })),
    expect: driver => expectedError(driver, 'TaskNotFound')
  },
  {
    name: 'cancel terminal',
    run: async client => view(await client.call('CancelTask', { id: (await sent(client, 'done')).task.id })),
    expect: driver => expectedError(driver, 'TaskNotCancelable')
  },
  {
    name: 'subscribe terminal',
    run: async client => streamView(await client.stream('SubscribeToTask', { id: (await sent(client, 'done')).task.id })),
    expect: driver => expectedError(driver, 'UnsupportedOperation')
  },
  {
    name: 'list with paging',
    async run (client) {
      const contextId = `ctx-equivalence-${randomUUID()}`
      const ids: string[] = []
      for (const text of ['one', 'two', 'three']) ids.push((await sent(client, text, { contextId })).task.id)
      const first = await client.call('ListTasks', { contextId, pageSize: 2 })
      const token = first.ok ? first.result.nextPageToken : ''
      const second = await client.call('ListTasks', { contextId, pageSize: 2, pageToken: token })
      const pageView = (page: any) => ({
        states: page.tasks.map((task: any) => task.status.state),
        withArtifacts: page.tasks.filter((task: any) => 'artifacts' in task).length,
        nextPageToken: typeof page.nextPageToken === 'string' && page.nextPageToken !== '' ? '<cursor>' : page.nextPageToken,
        pageSize: page.pageSize,
        totalSize: page.totalSize
      })
      const listed = [first, second].flatMap(page => page.ok ? page.result.tasks.map((task: any) => task.id) : [])
      return { pages: [view(first, pageView), view(second, pageView)], everyTaskOnce: [...listed].sort().join() === [...ids].sort().join() }
    },
    expect: () => ({
      pages: [
        { states: ['TASK_STATE_COMPLETED', 'TASK_STATE_COMPLETED'], withArtifacts: 0, nextPageToken: '<cursor>', pageSize: 2, totalSize: 3 },
        { states: ['TASK_STATE_COMPLETED'], withArtifacts: 0, nextPageToken: '', pageSize: 2, totalSize: 3 }
      ],
      everyTaskOnce: true
    })
  },
  {
    name: 'push-config CRUD',
    async run (client) {
      const { task } = await sent(client, 'input')
      const configView = ({ taskId, ...config }: any) => ({ ...config, taskId: taskId === task.id ? '<task>' : taskId })
      const key = { taskId: task.id, id: 'hook' }
      return {
        created: view(await client.call('CreateTaskPushNotificationConfig', { ...key, url: 'https://hooks.example.com/a2a', token: 'tok' }), configView),
        fetched: view(await client.call('GetTaskPushNotificationConfig', key), configView),
        listed: view(await client.call('ListTaskPushNotificationConfigs', { taskId: task.id }), list => ({ ...list, configs: list.configs.map(configView) })),
        deleted: view(await client.call('DeleteTaskPushNotificationConfig', key)),
        gone: view(await client.call('GetTaskPushNotificationConfig', key))
      }
    },
    expect (driver) {
      const config = { id: 'hook', taskId: '<task>', url: 'https://hooks.example.com/a2a', token: 'tok' }
      return { created: config, fetched: config, listed: { configs: [config], nextPageToken: '' }, deleted: {}, gone: expectedError(driver, 'TaskNotFound') }
    }
  },
  {
    name: 'invalid params',
    async run (client) {
      return {
        message: view(await client.call('SendMessage', { message: { messageId: 'm', role: 'user', parts: [] } })),
        taskId: view(await client.call('GetTask', {}))
      }
    },
    expect: driver => ({
      message: expectedError(driver, 'InvalidParams', [
        { field: 'message.role', description: 'must be equal to one of the allowed values' },
        { field: 'message.parts', description: 'must not have fewer than 1 items' }
      ]),
      taskId: expectedError(driver, 'InvalidParams', [{ field: 'id', description: 'is required' }])
    })
  },
  {
    name: 'wrong version',
    headers: { 'a2a-version': '0.3' },
    async run (client) {
      return {
        unary: view(await client.call('GetTask', { id: 'missing' })),
        stream: streamView(await client.stream('SendStreamingMessage', { message: userMessage('hello') }))
      }
    },
    expect: driver => ({ unary: expectedError(driver, 'VersionNotSupported'), stream: expectedError(driver, 'VersionNotSupported') })
  },
  {
    name: 'missing version',
    headers: {},
    run: async client => view(await client.call('ListTasks', {})),
    expect: driver => expectedError(driver, 'VersionNotSupported')
  }
]

for (const scenario of scenarios) {
  t.test(scenario.name, async t => {
    for (const driver of drivers) {
      const client = await driver.connect(scenario.headers ?? V1)
      try {
        t.same(await scenario.run(client), scenario.expect(driver), driver.name)
      } finally {
        await client.close()
      }
    }
  })
}
