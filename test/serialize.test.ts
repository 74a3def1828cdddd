// The serialisers compiled from the wire schemas (lib/schema/serialize.ts): what
// JSON.stringify writes for values of the schemas' shapes, the schemas' fields only and in
// their order, and JSON.stringify's own output for anything else.
import t from 'tap'
import Fastify from 'fastify'
import Type from 'typebox'
import { ListTasksRequest, SendMessageResponse, StreamResponse, Task, a2aWebSocket } from '../lib/index.js'
import { compileSerializer } from '../lib/schema/serialize.js'
import { ListTasksResponse } from '../lib/schema/requests.js'
import { conformanceAgent, conformanceCard } from '../examples/agent.js'

const serializeTask = compileSerializer(Task)

/** Strings JSON.stringify escapes or keeps in every way it has: short and long (32 chars and more). */
const awkward = [
  '', 'plain', 'quote " and backslash \\', 'new\nline\ttab\r\u0000\u001f', 'é ü 中文', 'emoji 😀 pair',
  'lone \ud800 high', 'lone \udfff low', '\u007f del', 'x'.repeat(31), 'y'.repeat(32), 'long '.repeat(20),
  'long with a quote " at the end of it, after thirty-two characters', 'long with \ud83d alone, after thirty-two characters'
]

/** A task with every field set, in the schema's order. */
function fullTask (text: string) {
  const part = (extra: object) => ({ text, metadata: { k: text, n: [1, 2.5, -0, null, true] }, filename: text, mediaType: 'text/plain', ...extra })
  const message = {
    messageId: text || 'm', contextId: text, taskId: text, role: 'ROLE_AGENT',
    parts: [{ text }, { data: { nested: { deep: [text, { a: 1 }] } } }, { raw: 'AAEC' }, { url: 'https://example.test/' + text }, part({})],
    metadata: { any: { thing: text } }, extensions: [text, 'urn:x'], referenceTaskIds: [text]
  }
  return {
    id: text || 't', contextId: text,
    status: { state: 'TASK_STATE_INPUT_REQUIRED', message, timestamp: '2026-12-04T19:00:00.000Z' },
    artifacts: [{ artifactId: 'a', name: text, description: text, parts: [{ text }], metadata: { text }, extensions: [text] }],
    history: [message, { messageId: 'u', role: 'ROLE_USER', parts: [{ text }] }],
    metadata: { text, list: [text, 1e21, 1e-7] }
  }
}

t.test('a task of the schema\'s fields, in its order, is written as JSON.stringify writes it', async t => {
  for (const text of awkward) {
    const task = fullTask(text)
    t.equal(serializeTask(task), JSON.stringify(task), JSON.stringify(text))
  }
  const bare = { id: 't', status: { state: 'TASK_STATE_SUBMITTED' } }
  t.equal(serializeTask(bare), JSON.stringify(bare))
})

t.test('every StreamResponse member and both SendMessageResponse members', async t => {
  const task = fullTask('s')
  const serializeEvent = compileSerializer(StreamResponse)
  const events = [
    { task },
    { message: task.status.message },
    { statusUpdate: { taskId: 't', contextId: 'c', status: { state: 'TASK_STATE_WORKING' }, metadata: { a: 1 } } },
    { artifactUpdate: { taskId: 't', contextId: 'c', artifact: task.artifacts[0], append: true, lastChunk: false, metadata: {} } }
  ]
  for (const event of events) t.equal(serializeEvent(event), JSON.stringify(event))
  const serializeResponse = compileSerializer(SendMessageResponse)
  t.equal(serializeResponse({ task }), JSON.stringify({ task }))
  t.equal(serializeResponse({ message: task.history[1] }), JSON.stringify({ message: task.history[1] }))
})

t.test('numbers as JSON.stringify writes them, a non-finite one as null', async t => {
  const serialize = compileSerializer(ListTasksResponse)
  for (const pageSize of [0, -0, 7, 2.5, 1e21, Number.NaN, Number.POSITIVE_INFINITY]) {
    const page = { tasks: [], nextPageToken: '', pageSize, totalSize: 3 }
    t.equal(serialize(page), JSON.stringify(page), String(pageSize))
  }
})

t.test('unknown fields are left out and fields follow the schema\'s order (spec §5.7)', async t => {
  const task = {
    futureField: 1,
    status: { timestamp: '2026-12-04T19:00:00.000Z', state: 'TASK_STATE_COMPLETED', alsoUnknown: { x: 1 } },
    id: 't',
    history: [{ parts: [{ text: 'hi', extra: true }], role: 'ROLE_USER', messageId: 'm', later: 'x' }]
  }
  t.equal(serializeTask(task), '{"id":"t","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-12-04T19:00:00.000Z"},' +
    '"history":[{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}]}')
})

t.test('fields whose value JSON.stringify leaves out are left out', async t => {
  const task = { id: 't', contextId: undefined, status: { state: 'TASK_STATE_COMPLETED' }, metadata: { f: () => 1, u: undefined, when: new Date(0) } }
  t.equal(serializeTask(task), JSON.stringify(task))
  t.equal(serializeTask({ ...task, metadata: () => 1 }), '{"id":"t","status":{"state":"TASK_STATE_COMPLETED"}}')
  const anyFirst = compileSerializer(Type.Object({ data: Type.Unknown(), name: Type.String() }))
  t.equal(anyFirst({ data: () => 1, name: 'x' }), '{"name":"x"}', 'a required field of any JSON leads')
  t.equal(anyFirst({ data: [1], name: 'x' }), '{"data":[1],"name":"x"}')
})

t.test('a value of any JSON with a toJSON of its own is written under its key, the rest as compiled', async t => {
  // A v0.3 client's `kind` fields stay unknown fields: a Date in the agent's data is no reason to write them.
  const task = {
    id: 't', status: { state: 'TASK_STATE_COMPLETED' },
    artifacts: [{ artifactId: 'a', parts: [{ data: new Date(0), kind: 'data' }] }],
    history: [{ kind: 'message', messageId: 'm', role: 'ROLE_USER', parts: [{ kind: 'text', text: 'hi' }] }],
    metadata: { toJSON: (key: string) => ({ under: key }) }
  }
  t.equal(serializeTask(task), '{"id":"t","status":{"state":"TASK_STATE_COMPLETED"},' +
    '"artifacts":[{"artifactId":"a","parts":[{"data":"1970-01-01T00:00:00.000Z"}]}],' +
    '"history":[{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}],"metadata":{"under":"metadata"}}')
  const anyList = compileSerializer(Type.Object({ list: Type.Array(Type.Unknown()), extra: Type.Optional(Type.Unknown()) }))
  for (const value of [
    { list: [{ toJSON: (key: string) => key }, new Date(0), 1] },
    { list: [{ toJSON: () => undefined }] }, // JSON.stringify writes null
    { list: [], extra: { toJSON: (key: string) => key } },
    { list: [], extra: { toJSON: () => undefined } } // left out
  ]) t.equal(anyList(value), JSON.stringify(value), JSON.stringify(value))
})

t.test('a member named toJSON that is not a function is an unknown field like any other', async t => {
  // JSON.stringify calls only a function; a client's `"toJSON": null` in a part must not make
  // the whole answer fall back to it, which would write every unknown field stored.
  const task = {
    id: 't', status: { state: 'TASK_STATE_COMPLETED' }, unknownTaskField: 1,
    history: [{ messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hi', toJSON: null }], toJSON: 'x' }]
  }
  t.equal(serializeTask(task), '{"id":"t","status":{"state":"TASK_STATE_COMPLETED"},' +
    '"history":[{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}]}')
})

t.test('a value off the schema is JSON.stringify\'s whole', async t => {
  const offSchema: unknown[] = [
    { id: 7, status: { state: 'TASK_STATE_COMPLETED' } }, // a number for a string
    { status: { state: 'TASK_STATE_COMPLETED' } }, // no id, the leading required field
    { id: 't', status: [] }, // an array for an object
    { id: 't', status: null },
    { id: 't', status: { state: 'TASK_STATE_COMPLETED' }, artifacts: [undefined] }, // JSON.stringify writes null
    { id: 't', status: { state: 'TASK_STATE_COMPLETED' }, history: { 0: 'not an array' } },
    { id: 't', status: { state: 'TASK_STATE_COMPLETED' }, toJSON: () => ({ replaced: true }) },
    null, 'text', 3, [1, 2]
  ]
  for (const value of offSchema) t.equal(serializeTask(value), JSON.stringify(value), JSON.stringify(value) ?? 'undefined')
  const withFields = { id: 't', status: { state: 'TASK_STATE_COMPLETED', extra: 1 }, artifacts: [undefined], unknown: 2 }
  t.equal(serializeTask(withFields), JSON.stringify(withFields), 'the fallback keeps what JSON.stringify keeps')
})

t.test('a schema with nothing to compile serialises as JSON.stringify', async t => {
  const serialize = compileSerializer(ListTasksRequest.properties.status)
  t.equal(serialize('TASK_STATE_WORKING'), '"TASK_STATE_WORKING"')
})

t.test('a message\'s unknown fields do not come back in the task over any binding', async t => {
  const fastify = Fastify()
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard })
  t.teardown(() => fastify.close())
  const headers = { 'content-type': 'application/json', 'a2a-version': '1.0' }
  const message = { messageId: 'm-unknown', role: 'ROLE_USER', parts: [{ text: 'hello', futurePartField: 1 }], futureField: true }
  const rpc = await fastify.inject({
    method: 'POST', url: '/', headers, payload: { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message } }
  })
  const task = rpc.json().result.task
  t.equal(task.status.state, 'TASK_STATE_COMPLETED')
  t.same(Object.keys(task.history[0]), ['messageId', 'contextId', 'taskId', 'role', 'parts'])
  t.same(task.history[0].parts, [{ text: 'hello' }])
  t.equal(rpc.body, `{"jsonrpc":"2.0","id":1,"result":${JSON.stringify({ task })}}`, 'the body is the task written in the schema\'s order')
  const rest = await fastify.inject({ method: 'GET', url: `/tasks/${task.id as string}`, headers })
  t.equal(rest.body, JSON.stringify(task), 'GetTask over HTTP+JSON writes the same task')
})
