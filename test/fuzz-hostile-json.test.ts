// Cheap rejection of hostile JSON (issue 9 §2): the nesting limit and the size limit
// apply before any parse or schema work, on every binding, and a frame of 4 MiB
// nested to the end is refused after reading only its first brackets.
import t from 'tap'
import WebSocket from 'ws'
import { DEFAULT_MAX_JSON_DEPTH, depthExceededAt, parseJson } from '../lib/json-guard.js'
import { post, result, startServer, userMessage } from './helpers/server.js'
import { rest } from './helpers/rest.js'
import { connect, wsUrl } from './helpers/ws.js'

const FOUR_MIB = 4 * 1024 * 1024
const tooDeep = { code: -32600, message: 'Request payload validation error: JSON nested deeper than 64 levels' }

/** A JSON-RPC request whose params hold `depth` nested arrays. */
function nestedRequest (depth: number, id: unknown = 1): string {
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"SendMessage","params":{"x":${'['.repeat(depth)}${']'.repeat(depth)}}}`
}

/** Exactly `bytes` long: an envelope opening arrays until the size is used up (never closed: nobody should read that far). */
const HOSTILE_HEAD = '{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":'
function hostileFrame (bytes: number): string {
  return HOSTILE_HEAD + '['.repeat(bytes - HOSTILE_HEAD.length)
}

t.test('depthExceededAt: counts containers outside strings and stops at the first one too deep', async t => {
  t.equal(DEFAULT_MAX_JSON_DEPTH, 64)
  t.equal(depthExceededAt('[[1]]', 2), -1)
  t.equal(depthExceededAt('[[[1]]]', 2), 2, 'the offset of the third bracket')
  t.equal(depthExceededAt('{"a":{"b":{}}}', 2), 10)
  t.equal(depthExceededAt('["[[[[", "\\"[[[["]', 1), -1, 'brackets in strings, escaped quotes included, do not count')
  t.equal(depthExceededAt('[],[],[],[]', 1), -1, 'siblings do not add up')
  // A string is stepped over whole: what ends it is a quote after an even run of backslashes.
  t.equal(depthExceededAt('["\\\\", [[1]]]', 2), 8, 'a string ending in an escaped backslash ends there')
  t.equal(depthExceededAt('["\\\\\\"[[", [1]]', 2), -1, 'a quote after three backslashes does not end the string')
  t.equal(depthExceededAt('["' + 'a\\"['.repeat(10_000) + '", [[1]]]', 2), 40_006, 'brackets after a long string with escaped quotes count')
  t.equal(depthExceededAt('["[[[', 1), -1, 'an unterminated string runs to the end')
  const frame = hostileFrame(FOUR_MIB)
  t.equal(frame.length, FOUR_MIB)
  // Two levels in the head, then the 63rd bracket is the 65th level.
  t.equal(depthExceededAt(frame, 64), HOSTILE_HEAD.length + 62, 'a 4 MiB frame is refused within its first 130 bytes')
})

t.test('parseJson: too deep → -32600 before parsing, bad JSON → -32700, else the value', async t => {
  const deep = parseJson('['.repeat(65) + ']'.repeat(65), 64)
  t.equal(deep.ok, false)
  t.same(!deep.ok && [deep.error.row.jsonRpcCode, deep.error.message], [-32600, 'Request payload validation error: JSON nested deeper than 64 levels'])
  const bad = parseJson('{"a":', 64)
  t.same(!bad.ok && bad.error.row.jsonRpcCode, -32700)
  t.same(parseJson('['.repeat(64) + ']'.repeat(64), 64).ok, true, 'exactly the limit is accepted')
  // Fewer brackets than the limit, strings included, cannot nest past it (the scan is skipped); more are scanned.
  t.same(parseJson('{"a":"' + '['.repeat(100) + '"}', 64), { ok: true, value: { a: '['.repeat(100) } }, 'brackets in a string are no nesting')
  const deepAfterString = parseJson('{"a":"' + '{'.repeat(70) + '","b":' + '['.repeat(65) + ']'.repeat(65) + '}', 64)
  t.same(!deepAfterString.ok && deepAfterString.error.row.jsonRpcCode, -32600, 'nesting after a string full of brackets is still refused')
})

t.test('maxJsonDepth is an option, checked at registration', async t => {
  for (const bad of [0, -1, 2.5, 'deep']) {
    await t.rejects(startServer({ maxJsonDepth: bad as number }), { code: 'A2A_ERR_INVALID_OPTION', message: 'Invalid option maxJsonDepth: must be an integer >= 1' }, `maxJsonDepth ${String(bad)} is refused`)
  }
  // Deeper than JSON.stringify can write (about 5,000 levels): such a request could be taken and its answer never sent.
  await t.rejects(startServer({ maxJsonDepth: 1001 }), { code: 'A2A_ERR_INVALID_OPTION', message: 'Invalid option maxJsonDepth: must be at most 1000' })
  const deepest = await startServer({ maxJsonDepth: 1000 })
  t.teardown(() => deepest.close())
  const deepData = (depth: number) => ({
    jsonrpc: '2.0', id: 1, method: 'SendMessage',
    params: { message: { role: 'ROLE_USER', messageId: 'deep', parts: [{ data: JSON.parse('['.repeat(depth) + ']'.repeat(depth)) }] } }
  })
  // The part sits 5 levels down (the request, params, message, parts, the part): 995 more fit.
  const answered = await post(deepest.endpoint, deepData(995))
  t.equal(answered.body.result?.task?.status?.state, 'TASK_STATE_COMPLETED', 'a request at the largest limit is served and answered')
  const shallow = await startServer({ maxJsonDepth: 8 })
  t.teardown(() => shallow.close())
  const reply = await post(shallow.endpoint, nestedRequest(7))
  t.same(reply.body.error, { code: -32600, message: 'Request payload validation error: JSON nested deeper than 8 levels' })
  t.equal((await post(shallow.endpoint, nestedRequest(6))).body.error.code, -32602, 'within the limit: the schema speaks')
})

t.test('JSON-RPC over HTTP: depth 65 refused with -32600 and a null id; 64 reaches the schema', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  // The envelope and params add two levels.
  const refused = await post(server.endpoint, nestedRequest(63, 'deep'))
  t.equal(refused.status, 200)
  t.same(refused.body, { jsonrpc: '2.0', id: null, error: tooDeep })
  const accepted = await post(server.endpoint, nestedRequest(62, 'ok'))
  t.equal(accepted.body.id, 'ok')
  t.equal(accepted.body.error.code, -32602, 'schema work happens only below the limit')

  const hostile = await post(server.endpoint, hostileFrame(FOUR_MIB))
  t.same(hostile.body, { jsonrpc: '2.0', id: null, error: tooDeep }, 'a 4 MiB nested body')
  const oversized = await post(server.endpoint, hostileFrame(FOUR_MIB + 1))
  t.equal(oversized.status, 413, 'the size limit applies first')
  t.equal(oversized.body.error.code, -32600)
  t.equal((await result(server.endpoint, 'SendMessage', { message: userMessage('still here') })).task.status.state, 'TASK_STATE_COMPLETED')
})

t.test('HTTP+JSON: a too deep body is 400 INVALID_ARGUMENT; a 4 MiB one too', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  const body = `{"message":${'['.repeat(70)}${']'.repeat(70)}}`
  const refused = await rest(server.origin, 'POST', '/message:send', { body })
  t.equal(refused.status, 400)
  t.same(refused.body, { error: { code: 400, status: 'INVALID_ARGUMENT', message: tooDeep.message } })
  const hostile = await rest(server.origin, 'POST', '/message:send', { body: '{"message":' + '['.repeat(FOUR_MIB - 11) })
  t.equal(hostile.status, 400)
  t.equal(hostile.body.error.message, tooDeep.message)
  const oversized = await rest(server.origin, 'POST', '/message:send', { body: '{"message":' + '['.repeat(FOUR_MIB - 10) })
  t.equal(oversized.status, 413)
  t.equal(oversized.body.error.code, 413)
  const sent = await rest(server.origin, 'POST', '/message:send', { body: { message: userMessage('still here') } })
  t.equal(sent.body.task.status.state, 'TASK_STATE_COMPLETED')
})

t.test('WebSocket: a too deep frame is -32600 with a null id; a 4 MiB one too; one byte more closes 1009', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  const client = await connect(wsUrl(server.origin))
  t.teardown(() => client.close())
  client.send(nestedRequest(63, 'deep'))
  t.same(await client.next(), { jsonrpc: '2.0', id: null, error: tooDeep })
  client.send(hostileFrame(FOUR_MIB))
  t.same(await client.next(), { jsonrpc: '2.0', id: null, error: tooDeep })
  t.equal((await client.request('SendMessage', { message: userMessage('still here') })).result.task.status.state, 'TASK_STATE_COMPLETED', 'the connection goes on')

  const other = await connect(wsUrl(server.origin))
  other.socket.send(hostileFrame(FOUR_MIB + 1))
  t.equal((await other.closed).code, 1009, 'the size limit applies first')
  const again = new WebSocket(wsUrl(server.origin))
  await new Promise(resolve => again.once('open', resolve))
  t.pass('a new connection is accepted')
  again.close()
})
