// The fuzzing of issue 9 §1, shared by the bounded runs in `npm test` (test/fuzz-*.test.ts)
// and the long runs of `npm run fuzz` (test/fuzz/run.ts): generators of hostile JSON-RPC
// frames and REST requests, an oracle that says what the spec requires for each, and
// clients that send them over real sockets and check every answer.
import http from 'node:http'
import { randomUUID } from 'node:crypto'
import fc from 'fast-check'
import type { Test } from 'tap'
import WebSocket from 'ws'
import { conformanceCard } from '../../examples/agent.js'
import type { A2APluginOptions, AgentExecutor } from '../../lib/index.js'
import { startServer } from './server.js'

// ---- the server under fuzz -----------------------------------------------------------------

/** Mounted under a prefix, so that every path below it is the binding's (A2A 404 bodies). */
const FUZZ_PREFIX = '/a2a'

/**
 * Finishes every task at once (so no stream stays open), echoing the message's parts through
 * the store and back; a few texts pick another ending. No command waits or loops.
 */
const fuzzExecutor: AgentExecutor = {
  async execute (context, events) {
    const text = context.message.parts.find(part => typeof part.text === 'string')?.text
    switch (text) {
      case 'input': return await events.inputRequired('need input')
      case 'message': return await events.message('a direct reply')
      case 'fail': return await events.failed('failed on purpose')
      case 'reject': return await events.rejected()
      case 'throw': throw new Error('thrown on purpose')
    }
    await events.working()
    await events.artifact({ artifactId: 'echo', parts: context.message.parts })
    await events.completed()
  }
}

/** Push is not declared, so no fuzzed webhook URL is ever contacted; the push methods still validate their params. */
export const fuzzServerOptions: Partial<A2APluginOptions> = {
  prefix: FUZZ_PREFIX,
  executor: fuzzExecutor,
  card: { ...conformanceCard, capabilities: { streaming: true, pushNotifications: false, extendedAgentCard: true } },
  extendedCard: conformanceCard
}

// ---- generators --------------------------------------------------------------------------

const METHODS = [
  'SendMessage', 'SendStreamingMessage', 'GetTask', 'ListTasks', 'CancelTask', 'SubscribeToTask',
  'CreateTaskPushNotificationConfig', 'GetTaskPushNotificationConfig', 'ListTaskPushNotificationConfigs',
  'DeleteTaskPushNotificationConfig', 'GetExtendedAgentCard'
]
const STREAM_METHODS = new Set(['SendStreamingMessage', 'SubscribeToTask'])
const STATES = ['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_REJECTED', 'TASK_STATE_AUTH_REQUIRED', 'TASK_STATE_UNSPECIFIED']

const hugeNumber = fc.constantFrom(1e308, -1e308, 2 ** 53 + 2, -(2 ** 63), 1e21, 5e-324, -0, 0.1, 1.7976931348623157e308, 123456789012345678901234567890)
const loneSurrogate = fc.constantFrom('\ud800', '\udfff', 'a\ud83d', '\udc00\ud800', 'x\u0000y', '\ufeff')
const longString = fc.integer({ min: 1_000, max: 200_000 }).map(length => 'x'.repeat(length))
const shortText = fc.oneof(fc.string({ maxLength: 16 }), fc.string({ unit: 'binary', maxLength: 8 }), loneSurrogate)
const scalar = fc.oneof(shortText, fc.integer(), fc.double(), hugeNumber, fc.boolean(), fc.constant(null))
/** Any JSON value, hostile ones weighted up. */
const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: scalar },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: longString },
  { weight: 1, arbitrary: fc.constantFrom({}, [], [[]], { '': null }) }
)
/** Member names: the envelope's own, prototype-polluting ones, and random ones. */
const memberName = fc.oneof(
  fc.constantFrom('jsonrpc', 'id', 'method', 'params', 'message', 'parts', 'text', 'taskId', 'id', 'tenant', 'metadata', 'configuration'),
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty'),
  shortText
)

const ids = (taskIds: readonly string[]) => fc.oneof(fc.constantFrom(...taskIds), shortText, fc.uuid())
const part = fc.oneof(
  fc.record({ text: fc.oneof(shortText, fc.constantFrom('input', 'message', 'fail', 'reject', 'throw', 'hello')) }),
  fc.record({ data: fc.jsonValue({ maxDepth: 2 }) }),
  fc.record({ raw: fc.base64String({ maxLength: 12 }), mediaType: fc.constantFrom('text/plain', 'application/json', 'image/png', '') }),
  fc.record({ url: fc.constantFrom('https://example.invalid/file', 'not a url'), filename: shortText })
)
const message = (taskIds: readonly string[]) => fc.record({
  messageId: fc.oneof(fc.uuid(), shortText),
  role: fc.constantFrom('ROLE_USER', 'ROLE_USER', 'ROLE_AGENT', 'ROLE_UNSPECIFIED'),
  parts: fc.array(part, { minLength: 1, maxLength: 3 }),
  taskId: ids(taskIds),
  contextId: shortText,
  metadata: fc.dictionary(shortText, anyJson, { maxKeys: 2 })
}, { requiredKeys: ['messageId', 'role', 'parts'] })
const sendParams = (taskIds: readonly string[]) => fc.record({
  message: message(taskIds),
  configuration: fc.record({
    returnImmediately: fc.boolean(),
    historyLength: fc.integer({ min: -2, max: 5 }),
    acceptedOutputModes: fc.array(shortText, { maxLength: 2 }),
    taskPushNotificationConfig: fc.record({ url: fc.constant('https://example.invalid/hook') })
  }, { requiredKeys: [] }),
  metadata: fc.dictionary(shortText, anyJson, { maxKeys: 2 }),
  tenant: fc.constantFrom('', 't1')
}, { requiredKeys: ['message'] })

/**
 * A SendStreamingMessage the server must serve as a stream: a new task (no taskId) and no
 * push config (push is off). The mutated requests almost never are one, so without these no
 * stream would be fuzzed past its refusal.
 */
const streamedSendParams = fc.record({
  message: fc.record({
    messageId: fc.uuid(),
    role: fc.constant('ROLE_USER'),
    parts: fc.array(part, { minLength: 1, maxLength: 3 }),
    metadata: fc.dictionary(shortText, anyJson, { maxKeys: 2 })
  }, { requiredKeys: ['messageId', 'role', 'parts'] }),
  configuration: fc.record({ historyLength: fc.integer({ min: 0, max: 5 }), returnImmediately: fc.boolean() }, { requiredKeys: [] }),
  metadata: fc.dictionary(shortText, anyJson, { maxKeys: 2 })
}, { requiredKeys: ['message'] })

/** Roughly valid params for each method: mutations then make them wrong in every way. */
function paramsFor (method: string, taskIds: readonly string[]): fc.Arbitrary<Record<string, unknown>> {
  const id = ids(taskIds)
  const page = { pageSize: fc.integer({ min: -1, max: 200 }), pageToken: fc.oneof(shortText, fc.base64String({ maxLength: 16 })) }
  switch (method) {
    case 'SendMessage':
    case 'SendStreamingMessage': return sendParams(taskIds)
    case 'GetTask': return fc.record({ id, historyLength: fc.integer({ min: -2, max: 10 }) }, { requiredKeys: ['id'] })
    case 'ListTasks': return fc.record({
      ...page,
      contextId: shortText,
      status: fc.constantFrom(...STATES),
      historyLength: fc.integer({ min: -2, max: 10 }),
      includeArtifacts: fc.boolean(),
      statusTimestampAfter: fc.oneof(fc.date({ noInvalidDate: true }).map(date => date.toISOString()), shortText)
    }, { requiredKeys: [] })
    case 'CancelTask':
    case 'SubscribeToTask': return fc.record({ id, metadata: fc.dictionary(shortText, anyJson, { maxKeys: 1 }) }, { requiredKeys: ['id'] })
    case 'CreateTaskPushNotificationConfig': return fc.record({ taskId: id, url: fc.constantFrom('https://example.invalid/hook', 'ftp://x', 'nope'), token: shortText, id: shortText }, { requiredKeys: ['taskId', 'url'] })
    case 'GetTaskPushNotificationConfig':
    case 'DeleteTaskPushNotificationConfig': return fc.record({ taskId: id, id: shortText })
    case 'ListTaskPushNotificationConfigs': return fc.record({ taskId: id, ...page }, { requiredKeys: ['taskId'] })
    default: return fc.constant({})
  }
}

type Path = Array<string | number>

/** Every path to a member or element of `value`, the root included. */
function pathsOf (value: unknown, prefix: Path = [], out: Path[] = []): Path[] {
  out.push(prefix)
  if (Array.isArray(value)) value.forEach((item, index) => pathsOf(item, [...prefix, index], out))
  else if (value !== null && typeof value === 'object') for (const [key, item] of Object.entries(value)) pathsOf(item, [...prefix, key], out)
  return out
}

function nest (depth: number, inner: unknown, asObject: boolean): unknown {
  let value = inner
  for (let i = 0; i < depth; i++) value = asObject ? { n: value } : [value]
  return value
}

type Mutation =
  | { kind: 'set', at: number, value: unknown }
  | { kind: 'delete', at: number }
  | { kind: 'add', at: number, name: string, value: unknown }
  | { kind: 'nest', at: number, depth: number, asObject: boolean }

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('set' as const), at: fc.nat(), value: anyJson }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), at: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('add' as const), at: fc.nat(), name: memberName, value: anyJson }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('nest' as const), at: fc.nat(), depth: fc.integer({ min: 1, max: 120 }), asObject: fc.boolean() }) }
)

/** Applies a mutation to a copy of `root` (a path picked among the current ones). */
function mutate (root: unknown, change: Mutation): unknown {
  const paths = pathsOf(root)
  const path = paths[change.at % paths.length] as Path
  const copy = structuredClone(root)
  const replace = (value: unknown): unknown => {
    if (path.length === 0) return value
    let parent = copy as Record<string | number, unknown>
    for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>
    parent[path.at(-1) as string | number] = value
    return copy
  }
  const current = path.reduce<unknown>((value, key) => (value as Record<string | number, unknown>)[key], copy)
  switch (change.kind) {
    case 'set': return replace(change.value)
    case 'nest': return replace(nest(change.depth, current, change.asObject))
    case 'delete': {
      if (path.length === 0) return copy
      let parent = copy as Record<string | number, unknown>
      for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>
      if (Array.isArray(parent)) parent.splice(path.at(-1) as number, 1)
      else delete parent[path.at(-1) as string]
      return copy
    }
    case 'add': {
      if (current === null || typeof current !== 'object' || Array.isArray(current)) return copy
      // defineProperty: a member named __proto__ is a member, as JSON.parse makes it.
      Object.defineProperty(current, change.name, { value: change.value, enumerable: true, writable: true, configurable: true })
      return copy
    }
  }
}

/** A JSON object text from members in order, repeats allowed (duplicate keys). */
function objectText (members: Array<[string, unknown]>): string {
  return `{${members.map(([name, value]) => `${JSON.stringify(name)}:${JSON.stringify(value) ?? 'null'}`).join(',')}}`
}

/** Ids of every JSON type, hostile numbers included. */
const anyId: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.oneof(fc.string({ maxLength: 12 }), fc.integer()) },
  { weight: 2, arbitrary: fc.oneof(hugeNumber, fc.double(), loneSurrogate, fc.constant(null)) },
  { weight: 1, arbitrary: fc.oneof(fc.boolean(), fc.constantFrom({}, [], [1], { id: 1 })) }
)

const textDamage = fc.oneof(
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), text: fc.constantFrom(',', '}', ']', '"', '\\', ':', 'null', '\u0000', '\ud800', '//', 'NaN', '1e999', ' ') }),
  fc.record({ kind: fc.constant('append' as const), text: fc.constantFrom(' ', '\n', '{}', 'x', ',', '\u2028') })
)
const invalidUtf8 = fc.constantFrom([0xff], [0xc3], [0xe2, 0x82], [0xed, 0xa0, 0x80], [0xc0, 0xaf], [0xf4, 0x90, 0x80, 0x80], [0xf0, 0x9f, 0x98])

/** One frame (WebSocket) or body (HTTP): the bytes sent, and whether it goes as a binary frame. */
export interface RpcFrame {
  bytes: Buffer
  binary: boolean
}

/** JSON-RPC frames: mutated requests of every method, duplicate keys, damaged text, invalid UTF-8, binary frames. */
export function rpcFrames (taskIds: readonly string[]): fc.Arbitrary<RpcFrame> {
  const request = fc.constantFrom(...METHODS, 'message/send', 'tasks/get', 'NoSuchMethod', '').chain(method =>
    fc.record({
      method: fc.constant(method),
      params: paramsFor(method, taskIds),
      id: fc.option(anyId, { nil: undefined, freq: 4 }),
      mutations: fc.array(mutation, { maxLength: 3 }),
      duplicates: fc.array(fc.tuple(fc.constantFrom('jsonrpc', 'id', 'method', 'params'), anyJson), { maxLength: 1 })
    }))
  const text = request.map(({ method, params, id, mutations, duplicates }) => {
    const envelope: Record<string, unknown> = { jsonrpc: '2.0', method, params }
    if (id !== undefined) envelope.id = id
    const value = mutations.reduce<unknown>(mutate, envelope)
    if (duplicates.length === 0 || value === null || typeof value !== 'object' || Array.isArray(value)) return JSON.stringify(value)
    const [[name, first]] = duplicates as [[string, unknown]]
    return objectText([[name, first], ...Object.entries(value)])
  })
  const damaged = fc.tuple(text, textDamage).map(([original, damage]) => {
    if (damage.kind === 'append') return original + damage.text
    const at = damage.at % (original.length + 1)
    return damage.kind === 'truncate' ? original.slice(0, at) : original.slice(0, at) + damage.text + original.slice(at)
  })
  const utf8 = fc.tuple(text, invalidUtf8, fc.nat()).map(([frame, bad, at]) => {
    const bytes = Buffer.from(frame)
    const cut = at % (bytes.length + 1)
    return { bytes: Buffer.concat([bytes.subarray(0, cut), Buffer.from(bad), bytes.subarray(cut)]), binary: false }
  })
  const streamed = fc.record({ id: fc.oneof(fc.string({ maxLength: 12 }), fc.integer()), params: streamedSendParams })
    .map(({ id, params }) => JSON.stringify({ jsonrpc: '2.0', id, method: 'SendStreamingMessage', params }))
  return fc.oneof(
    { weight: 8, arbitrary: text.map(frame => ({ bytes: Buffer.from(frame), binary: false })) },
    { weight: 2, arbitrary: damaged.map(frame => ({ bytes: Buffer.from(frame), binary: false })) },
    { weight: 1, arbitrary: utf8 },
    { weight: 1, arbitrary: text.map(frame => ({ bytes: Buffer.from(frame), binary: true })) },
    { weight: 1, arbitrary: streamed.map(frame => ({ bytes: Buffer.from(frame), binary: false })) }
  )
}

/** The most brackets open at once outside strings: the test's own count (the limit applies before parsing, to any text). */
function jsonDepth (text: string): number {
  let depth = 0
  let deepest = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (inString) {
      if (c === '\\') i++
      else if (c === '"') inString = false
    } else if (c === '"') inString = true
    else if (c === '{' || c === '[') deepest = Math.max(deepest, ++depth)
    else if (c === '}' || c === ']') depth--
  }
  return deepest
}

// ---- the oracle --------------------------------------------------------------------------

const MAX_DEPTH = 64
/** The codes a known method may answer with for a fuzzed request: never -32603 (that would be a bug). */
const ANSWER_CODES = new Set([-32602, -32001, -32002, -32003, -32004, -32005, -32006, -32007, -32008, -32009])

/** What the spec says a frame gets. */
type RpcExpectation =
  | { kind: 'none' }
  | { kind: 'error', id: unknown, code: number }
  | { kind: 'answer', id: unknown, stream: boolean }
  | { kind: 'close', code: number }

const isValidUtf8 = (bytes: Buffer) => {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes)
    return true
  } catch {
    return false
  }
}

/** JSON-RPC 2.0 §4–§5, seed 000 §3, and the depth limit. `transport` decides what a binary frame or bad UTF-8 is. */
function expectRpc (frame: RpcFrame, transport: 'ws' | 'http'): RpcExpectation {
  if (transport === 'ws' && frame.binary) return { kind: 'error', id: null, code: -32700 }
  // JSON text is UTF-8 (RFC 8259 §8.1): a WebSocket closes (1007), an HTTP body is not JSON.
  if (!isValidUtf8(frame.bytes)) return transport === 'ws' ? { kind: 'close', code: 1007 } : { kind: 'error', id: null, code: -32700 }
  const text = frame.bytes.toString('utf8')
  // Too deep is refused before parsing, JSON or not.
  if (jsonDepth(text) > MAX_DEPTH) return { kind: 'error', id: null, code: -32600 }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return { kind: 'error', id: null, code: -32700 }
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { kind: 'error', id: null, code: -32600 }
  const request = value as Record<string, unknown>
  const hasId = Object.hasOwn(request, 'id')
  const { id } = request
  if (hasId && !(id === null || typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)))) return { kind: 'error', id: null, code: -32600 }
  const replyId = hasId ? id : null
  if (request.jsonrpc !== '2.0' || typeof request.method !== 'string') return { kind: 'error', id: replyId, code: -32600 }
  if (!METHODS.includes(request.method)) return hasId ? { kind: 'error', id: replyId, code: -32601 } : { kind: 'none' }
  const { params } = request
  if (params !== undefined && (params === null || typeof params !== 'object' || Array.isArray(params))) {
    return hasId ? { kind: 'error', id: replyId, code: -32602 } : { kind: 'none' }
  }
  return hasId ? { kind: 'answer', id: replyId, stream: STREAM_METHODS.has(request.method) } : { kind: 'none' }
}

/** Throws, saying why, unless `response` is a JSON-RPC response the expectation allows. */
function checkRpcResponse (response: any, expected: RpcExpectation & { id: unknown }, last = true): void {
  const fail = (why: string) => { throw new Error(`${why}: ${JSON.stringify(response)?.slice(0, 500)} (expected ${JSON.stringify(expected)})`) }
  if (response === null || typeof response !== 'object' || Array.isArray(response)) fail('not a JSON object')
  if (response.jsonrpc !== '2.0') fail('jsonrpc is not "2.0"')
  if (!Object.is(JSON.stringify(response.id), JSON.stringify(expected.id))) fail('wrong id')
  const keys = Object.keys(response).sort().join(',')
  if (keys !== 'error,id,jsonrpc' && keys !== 'id,jsonrpc,result') fail('not exactly one of result and error')
  if ('error' in response) {
    const { error } = response
    if (typeof error?.code !== 'number' || typeof error.message !== 'string') fail('a malformed error object')
    if (error.data !== undefined && !Array.isArray(error.data)) fail('error data is not an array of details')
    if (expected.kind === 'error' && error.code !== expected.code) fail(`code ${error.code} instead of ${expected.code}`)
    if (expected.kind === 'answer' && !ANSWER_CODES.has(error.code)) fail(`code ${error.code} is not an answer to a well-formed request`)
    if (!last) fail('an error before the end of a stream')
  } else {
    if (expected.kind === 'error') fail('a result where an error was due')
    if (response.result === null || typeof response.result !== 'object') fail('the result is not an object')
  }
}

// ---- REST ---------------------------------------------------------------------------------

export interface RestCase {
  method: string
  path: string
  headers: Record<string, string>
  body?: Buffer
  /** The route streams (SSE) when it succeeds. */
  streams: boolean
}

/**
 * A path segment, percent-encoded byte by byte, or odd but valid escapes. A malformed escape
 * (`%ZZ`, partial UTF-8) or a parameter over Fastify's maxParamLength (100) never reaches a
 * route: Fastify answers those itself (FST_ERR_BAD_URL, FST_ERR_MAX_PARAM_LENGTH; README
 * *Hardening*), so they are fuzzed in query strings only. No `.` or `..`: they leave the REST surface.
 */
const segment = (taskIds: readonly string[]) => fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...taskIds).map(encodeURIComponent) },
  { weight: 3, arbitrary: shortText.map(text => percentEncode(Buffer.from(text)).slice(0, 96).replace(/%[0-9A-F]?$/, '')) },
  { weight: 1, arbitrary: fc.constantFrom('%00', '%2F', ':cancel', '::', '%3Acancel', '%F0%9F%98%80', '%EF%BF%BD') }
)

function percentEncode (bytes: Buffer): string {
  let out = ''
  for (const byte of bytes) out += /[A-Za-z0-9\-._~]/.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : `%${byte.toString(16).padStart(2, '0').toUpperCase()}`
  return out
}

const QUERY_NAMES = ['historyLength', 'pageSize', 'pageToken', 'status', 'contextId', 'includeArtifacts', 'statusTimestampAfter', 'tenant', 'id', 'taskId', 'A2A-Version', '__proto__', 'constructor']
const queryValue = fc.oneof(
  fc.constantFrom('1', '-1', '0', '1e400', '99999999999999999999', 'true', 'false', 'TASK_STATE_COMPLETED', '', '1.0', '%', '%E2%82', '%ED%A0%80', 'a,b', '2020-01-01T00:00:00Z'),
  shortText.map(text => percentEncode(Buffer.from(text)))
)
const query = fc.array(fc.tuple(fc.oneof(fc.constantFrom(...QUERY_NAMES), shortText.map(text => percentEncode(Buffer.from(text)))), queryValue), { maxLength: 4 })
  .map(pairs => pairs.length === 0 ? '' : '?' + pairs.map(([name, value]) => `${name}=${value}`).join('&'))

const ROUTES: Array<{ template: string, streams: boolean }> = [
  { template: '/message:send', streams: false },
  { template: '/message:stream', streams: true },
  { template: '/tasks/{id}', streams: false },
  { template: '/tasks', streams: false },
  { template: '/tasks/{id}:cancel', streams: false },
  { template: '/tasks/{id}:subscribe', streams: true },
  { template: '/tasks/{id}/pushNotificationConfigs', streams: false },
  { template: '/tasks/{id}/pushNotificationConfigs/{id}', streams: false },
  { template: '/extendedAgentCard', streams: false },
  { template: '/{id}', streams: false },
  { template: '/tasks/{id}/{id}/{id}', streams: false }
]

const restBody = (taskIds: readonly string[]) => fc.oneof(
  { weight: 4, arbitrary: fc.tuple(sendParams(taskIds), fc.array(mutation, { maxLength: 3 })).map(([params, mutations]) => Buffer.from(JSON.stringify(mutations.reduce<unknown>(mutate, params)))) },
  { weight: 2, arbitrary: anyJson.map(value => Buffer.from(JSON.stringify(value) ?? '')) },
  { weight: 1, arbitrary: fc.constantFrom('', '{', '{"message":', 'null', '[]', '{"a":1,"a":2}', '\u0000').map(text => Buffer.from(text)) },
  { weight: 1, arbitrary: fc.tuple(invalidUtf8, fc.constantFrom('{"message":"', '{"x":1}')).map(([bad, text]) => Buffer.concat([Buffer.from(text), Buffer.from(bad)])) }
)

/** REST requests: every route (and some that are none), every verb, hostile segments, query strings and bodies. */
export function restCases (taskIds: readonly string[]): fc.Arbitrary<RestCase> {
  const streamed = fc.record({
    tenant: fc.constantFrom('', '/t1'),
    contentType: fc.constantFrom('application/a2a+json', 'application/json'),
    body: streamedSendParams
  }).map(({ tenant, contentType, body }): RestCase => ({
    method: 'POST',
    path: `${FUZZ_PREFIX}${tenant}/message:stream`,
    headers: { 'content-type': contentType, 'a2a-version': '1.0' },
    body: Buffer.from(JSON.stringify(body)),
    streams: true
  }))
  const fuzzed = fc.record({
    route: fc.constantFrom(...ROUTES),
    segments: fc.array(segment(taskIds), { minLength: 3, maxLength: 3 }),
    tenant: fc.option(segment(taskIds), { nil: undefined, freq: 4 }),
    verb: fc.constantFrom('GET', 'GET', 'POST', 'POST', 'DELETE', 'PUT', 'PATCH'),
    query,
    contentType: fc.constantFrom('application/a2a+json', 'application/json', 'application/json; charset=utf-8', 'text/plain', 'application/json; charset=latin1', undefined),
    version: fc.constantFrom('1.0', '1.0', '1.0', '0.3', undefined, '1.0.7'),
    body: fc.option(restBody(taskIds), { nil: undefined, freq: 5 })
  }).filter(({ route, segments, tenant }) => !(route.template === '/{id}' && tenant === undefined && segments[0] === ''))
    // ...which would be the JSON-RPC and WebSocket endpoint, not a REST route.
    .map(({ route, segments, tenant, verb, query, contentType, version, body }) => {
    let index = 0
    const path = route.template.replace(/\{id\}/g, () => segments[index++] as string)
    const headers: Record<string, string> = {}
    if (contentType !== undefined) headers['content-type'] = contentType
    if (version !== undefined) headers['a2a-version'] = version
    const withBody = verb === 'POST' || verb === 'PUT' || verb === 'PATCH'
    return {
      method: verb,
      path: FUZZ_PREFIX + (tenant === undefined ? '' : `/${tenant}`) + path + query,
      headers,
      body: withBody ? body : undefined,
      streams: route.streams
    }
  })
  return fc.oneof({ weight: 12, arbitrary: fuzzed }, { weight: 1, arbitrary: streamed })
}

const GRPC_STATUSES = new Set(['INVALID_ARGUMENT', 'NOT_FOUND', 'FAILED_PRECONDITION', 'UNAUTHENTICATED', 'PERMISSION_DENIED', 'RESOURCE_EXHAUSTED', 'UNAVAILABLE', 'INTERNAL'])
/** Statuses a fuzzed request may get; a 500 would be a bug. */
const REST_ERROR_STATUSES = new Set([400, 404, 413, 415])

/** Throws unless `body` is the binding's error body for `status` (spec §11.6). */
function checkRestError (body: any, status: number): void {
  const error = body?.error
  if (error === undefined || error.code !== status || !GRPC_STATUSES.has(error.status) || typeof error.message !== 'string') {
    throw new Error(`not the error body of a ${status}: ${JSON.stringify(body)?.slice(0, 500)}`)
  }
  if (error.details !== undefined && !Array.isArray(error.details)) throw new Error('details is not an array')
}

// ---- HTTP plumbing ------------------------------------------------------------------------

interface HttpAnswer {
  status: number
  contentType: string
  body: Buffer
}

const REQUEST_TIMEOUT_MS = 15_000

/** One request over a kept-alive connection; fails if no answer comes. */
function httpRequest (agent: http.Agent, origin: string, method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const outgoing = http.request(origin + path, { method, headers: body === undefined ? headers : { ...headers, 'content-length': String(body.length) }, agent, timeout: REQUEST_TIMEOUT_MS }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('end', () => resolve({ status: response.statusCode ?? 0, contentType: String(response.headers['content-type'] ?? ''), body: Buffer.concat(chunks) }))
      response.on('error', reject)
    })
    outgoing.on('timeout', () => outgoing.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`)))
    outgoing.on('error', reject)
    outgoing.end(body)
  })
}

function sseEvents (text: string): Array<{ event?: string, data: any }> {
  return text.split('\n\n').filter(block => block.trim() !== '').map(block => {
    const lines = block.split('\n')
    const event = lines.find(line => line.startsWith('event: '))?.slice(7)
    const data = JSON.parse(lines.filter(line => line.startsWith('data: ')).map(line => line.slice(6)).join('\n'))
    return event === undefined ? { data } : { event, data }
  })
}

// ---- the three fuzzers ----------------------------------------------------------------------

export interface Fuzzer<Case> {
  /** Sends the case, checks its answer, then checks that a valid call is still served. Throws on any deviation. */
  run (input: Case): Promise<void>
  /** How many cases were answered each way (`stream`: a stream that began), to tell what a run exercised. */
  readonly outcomes: Record<string, number>
  close (): Promise<void>
}

function count (outcomes: Record<string, number>, kind: string): void {
  outcomes[kind] = (outcomes[kind] ?? 0) + 1
}

/** The kind of an answer that is no stream: a result, the error due, or a well-formed request refused. */
const answerKind = (response: any, expected: RpcExpectation) => 'result' in response ? 'result' : expected.kind === 'error' ? 'error' : 'refused'

const STREAM_RESPONSE_KINDS = new Set(['task', 'message', 'statusUpdate', 'artifactUpdate'])

/** Throws unless `value` is a StreamResponse: an object with exactly one of its four members. */
function checkStreamResponse (value: any): void {
  const keys = value !== null && typeof value === 'object' && !Array.isArray(value) ? Object.keys(value) : []
  if (keys.length !== 1 || !STREAM_RESPONSE_KINDS.has(keys[0] as string)) throw new Error(`not a StreamResponse: ${JSON.stringify(value)?.slice(0, 300)}`)
}

/** Creates the tasks the generators refer to: one completed. */
export async function seedTasks (origin: string): Promise<string[]> {
  const agent = new http.Agent({ keepAlive: false })
  const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: 'seed', role: 'ROLE_USER', parts: [{ text: 'seed' }] } } }))
  const answer = await httpRequest(agent, origin, 'POST', `${FUZZ_PREFIX}/`, { 'content-type': 'application/json', 'a2a-version': '1.0' }, body)
  return [JSON.parse(answer.body.toString()).result.task.id as string]
}

const V1 = { 'content-type': 'application/json', 'a2a-version': '1.0' }

export function jsonRpcFuzzer (origin: string, taskId: string): Fuzzer<RpcFrame> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const post = (bytes: Buffer) => httpRequest(agent, origin, 'POST', `${FUZZ_PREFIX}/`, V1, bytes)
  const outcomes: Record<string, number> = {}
  return {
    outcomes,
    async run (frame) {
      const expected = expectRpc(frame, 'http')
      const answer = await post(frame.bytes)
      if (expected.kind === 'none') {
        if (answer.status !== 204 || answer.body.length !== 0) throw new Error(`a notification got ${answer.status} ${answer.body.toString().slice(0, 300)}`)
        count(outcomes, 'notification')
      } else if (expected.kind === 'error' || expected.kind === 'answer') {
        if (answer.status !== 200) throw new Error(`HTTP ${answer.status} for a JSON-RPC answer: ${answer.body.toString().slice(0, 300)}`)
        if (answer.contentType.startsWith('text/event-stream')) {
          if (expected.kind !== 'answer' || !expected.stream) throw new Error('a stream where none was due')
          const events = sseEvents(answer.body.toString())
          if (events.length === 0) throw new Error('an empty stream')
          events.forEach((event, index) => {
            const last = index === events.length - 1
            if (event.event !== undefined && (event.event !== 'error' || !last)) throw new Error(`event: ${event.event} at ${index}`)
            checkRpcResponse(event.data, expected, last)
            if (event.event === undefined) checkStreamResponse(event.data.result)
          })
          if (events[0]?.event !== undefined) throw new Error('a stream that opens with its error: an error before the first event is a plain response')
          count(outcomes, 'stream')
        } else {
          if (!answer.contentType.startsWith('application/json')) throw new Error(`content type ${answer.contentType}`)
          const response = JSON.parse(answer.body.toString())
          checkRpcResponse(response, expected)
          count(outcomes, answerKind(response, expected))
        }
      }
      await live()
    },
    async close () { agent.destroy() }
  }

  async function live (): Promise<void> {
    const id = `live-${randomUUID()}`
    const answer = await post(Buffer.from(JSON.stringify({ jsonrpc: '2.0', id, method: 'GetTask', params: { id: taskId } })))
    const response = JSON.parse(answer.body.toString())
    if (response.id !== id || response.result?.id !== taskId) throw new Error(`the next valid call failed: ${answer.body.toString().slice(0, 300)}`)
  }
}

export function restFuzzer (origin: string, taskId: string): Fuzzer<RestCase> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const outcomes: Record<string, number> = {}
  return {
    outcomes,
    async run (input) {
      const answer = await httpRequest(agent, origin, input.method, input.path, input.headers, input.body)
      const text = answer.body.toString()
      if (answer.status === 200) {
        if (answer.contentType.startsWith('text/event-stream')) {
          if (!input.streams) throw new Error('a stream from a unary route')
          const events = sseEvents(text)
          if (events.length === 0 || events[0]?.event !== undefined) throw new Error('a stream without a first event: an error before it is a plain response')
          events.forEach((event, index) => {
            if (event.event === 'error') {
              if (index !== events.length - 1) throw new Error('an error event before the end')
              if (!REST_ERROR_STATUSES.has(event.data?.error?.code)) throw new Error(`a mid-stream ${event.data?.error?.code}`)
              checkRestError(event.data, event.data.error.code)
            } else checkStreamResponse(event.data)
          })
          count(outcomes, 'stream')
        } else {
          const body = JSON.parse(text)
          if (body === null || typeof body !== 'object' || 'error' in body) throw new Error(`200 with ${text.slice(0, 300)}`)
          count(outcomes, 'result')
        }
      } else {
        if (!REST_ERROR_STATUSES.has(answer.status)) throw new Error(`HTTP ${answer.status}: ${text.slice(0, 300)}`)
        if (!/^application\/(a2a\+)?json/.test(answer.contentType)) throw new Error(`content type ${answer.contentType} for ${answer.status}`)
        checkRestError(JSON.parse(text), answer.status)
        count(outcomes, `HTTP ${answer.status}`)
      }
      const check = await httpRequest(agent, origin, 'GET', `${FUZZ_PREFIX}/tasks/${taskId}`, { 'a2a-version': '1.0' })
      if (check.status !== 200 || JSON.parse(check.body.toString()).id !== taskId) throw new Error(`the next valid call failed: ${check.status} ${check.body.toString().slice(0, 300)}`)
    },
    async close () { agent.destroy() }
  }
}

/** One WebSocket connection at a time (a new one after a close the spec requires). */
export function webSocketFuzzer (origin: string, taskId: string): Fuzzer<RpcFrame> {
  const url = `${origin.replace(/^http/, 'ws')}${FUZZ_PREFIX}/?A2A-Version=1.0`
  let socket: WebSocket | undefined
  let closed: Promise<number> = Promise.resolve(0)
  const waiting = new Map<string, (frame: any) => void>()
  let strays: any[] = []
  const outcomes: Record<string, number> = {}

  async function open (): Promise<WebSocket> {
    if (socket !== undefined && socket.readyState === WebSocket.OPEN) return socket
    const opened = new WebSocket(url)
    closed = new Promise(resolve => opened.on('close', (code) => resolve(code)))
    opened.on('message', (data) => {
      const frame = JSON.parse(data.toString())
      const key = JSON.stringify(frame.id)
      const listener = waiting.get(key)
      if (listener === undefined) strays.push(frame)
      else listener(frame)
    })
    await new Promise<void>((resolve, reject) => {
      opened.once('open', () => resolve())
      opened.once('error', reject)
    })
    socket = opened
    return opened
  }

  /** Frames for `id` up to the last one: one for a unary call, up to the marker or an error for a stream. */
  function answer (id: unknown, stream: boolean): Promise<any[]> {
    const key = JSON.stringify(id)
    return new Promise((resolve, reject) => {
      const frames: any[] = []
      const timer = setTimeout(() => { waiting.delete(key); reject(new Error(`no answer for id ${key}`)) }, REQUEST_TIMEOUT_MS)
      waiting.set(key, (frame) => {
        frames.push(frame)
        if (!stream || frame.error !== undefined || frame.result?.status === 'stream_complete') {
          clearTimeout(timer)
          waiting.delete(key)
          resolve(frames)
        }
      })
    })
  }

  async function live (connection: WebSocket): Promise<void> {
    const id = `live-${randomUUID()}`
    const reply = answer(id, false)
    connection.send(JSON.stringify({ jsonrpc: '2.0', id, method: 'GetTask', params: { id: taskId } }))
    const [frame] = await reply
    if (frame.result?.id !== taskId) throw new Error(`the next valid call failed: ${JSON.stringify(frame).slice(0, 300)}`)
  }

  function takeStrays (): void {
    if (strays.length === 0) return
    const unexpected = strays
    strays = []
    throw new Error(`unexpected frames: ${JSON.stringify(unexpected).slice(0, 500)}`)
  }

  return {
    outcomes,
    async run (frame) {
      const connection = await open()
      const expected = expectRpc(frame, 'ws')
      const reply = expected.kind === 'error' || expected.kind === 'answer' ? answer(expected.id, expected.kind === 'answer' && expected.stream) : undefined
      connection.send(frame.bytes, { binary: frame.binary })
      if (expected.kind === 'close') {
        const code = await closed
        if (code !== expected.code) throw new Error(`closed with ${code} instead of ${expected.code}`)
        takeStrays()
        count(outcomes, 'closed')
        await live(await open())
        return
      }
      if (reply === undefined) count(outcomes, 'notification')
      else {
        const frames = await reply
        const stream = expected.kind === 'answer' && expected.stream
        frames.forEach((response, index) => {
          const last = index === frames.length - 1
          if (last && response.result?.status === 'stream_complete') return
          checkRpcResponse(response, expected as RpcExpectation & { id: unknown }, last)
          if (stream && 'result' in response) checkStreamResponse(response.result)
        })
        if (stream && 'result' in frames[0]) {
          if (frames.length < 2) throw new Error('a stream of one frame')
          count(outcomes, 'stream')
        } else count(outcomes, answerKind(frames[0], expected))
      }
      await live(connection)
      takeStrays()
    },
    async close () {
      socket?.close()
      await closed
    }
  }
}

/**
 * The property of test/fuzz-*.test.ts: `runs` cases (a fixed seed keeps CI reproducible;
 * `npm run fuzz` explores new ones) against a live server, then no unhandled rejection and
 * no execution left running. Call it at the top of the test file, before any case runs.
 */
export function fuzzLiveServer<Case> (
  t: Test,
  title: string,
  fuzzerFor: (origin: string, taskId: string) => Fuzzer<Case>,
  casesFor: (taskIds: readonly string[]) => fc.Arbitrary<Case>,
  runs = 1200
): void {
  const unhandled: unknown[] = []
  process.on('unhandledRejection', (reason) => { unhandled.push(reason) })
  t.test(`${runs} ${title}, each answered as the spec says`, async t => {
    const server = await startServer(fuzzServerOptions)
    t.teardown(() => server.close())
    const [taskId] = await seedTasks(server.origin) as [string]
    const fuzzer = fuzzerFor(server.origin, taskId)
    await fc.assert(fc.asyncProperty(casesFor([taskId]), input => fuzzer.run(input)), { numRuns: runs, seed: 20260901 })
    await fuzzer.close()
    // The refusals are most of a run: streams must have been fuzzed past them too.
    const streams = fuzzer.outcomes.stream ?? 0
    t.ok(streams >= runs / 24, `${streams} of ${runs} cases were streams that began (at least 1 in 24): ${JSON.stringify(fuzzer.outcomes)}`)
    t.same(unhandled, [], 'no unhandled rejection')
    t.equal(server.fastify.a2a.handler.runningExecutions, 0, 'no execution left running')
  })
}
