// Media types of HTTP+JSON (spec §11, v1.0.1): application/a2a+json emitted unless the
// client's Accept prefers application/json; both accepted on input, in UTF-8; any other
// request Content-Type on a body route → 415 with the error body.
import http from 'node:http'
import { gzipSync } from 'node:zlib'
import t from 'tap'
import { A2A_JSON_UTF8, rest, restResult, restStream } from './helpers/rest.js'
import { startServer, userMessage, V1 } from './helpers/server.js'

const server = await startServer()
t.teardown(() => server.close())
const base = server.endpoint
const body = () => JSON.stringify({ message: userMessage('hello') })
const unsupported = (type: string) => ({ error: { code: 415, status: 'INVALID_ARGUMENT', message: `Unsupported media type ${type}: send application/a2a+json or application/json` } })

/** A raw POST, so that no Content-Type is added for the body. */
function rawPost (path: string, payload: string): Promise<{ status: number, body: any }> {
  return new Promise((resolve, reject) => {
    const request = http.request(`${base}${path}`, { method: 'POST', headers: V1 }, (response) => {
      let text = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => { text += chunk })
      response.on('end', () => resolve({ status: response.statusCode as number, body: JSON.parse(text) }))
    })
    request.on('error', reject)
    request.end(payload)
  })
}

t.test('both JSON media types are accepted, with or without charset=utf-8', async t => {
  for (const type of ['application/a2a+json', 'application/json', 'application/a2a+json; charset=utf-8', 'Application/JSON; Charset="UTF-8"']) {
    const reply = await rest(base, 'POST', '/message:send', { body: body(), headers: { ...V1, 'content-type': type } })
    t.equal(reply.status, 200, type)
    t.equal(reply.body.task.status.state, 'TASK_STATE_COMPLETED', type)
  }
})

t.test('any other Content-Type on a body route → 415 with the error body', async t => {
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/jsonx', 'application/problem+json', 'application/json; charset=iso-8859-1']) {
    const reply = await rest(base, 'POST', '/message:send', { body: body(), headers: { ...V1, 'content-type': type } })
    t.equal(reply.status, 415, type)
    t.equal(reply.headers.get('content-type'), A2A_JSON_UTF8)
    t.same(reply.body, unsupported(type), type)
  }
  const stream = await restStream(base, 'POST', '/message:stream', { body: body(), headers: { ...V1, 'content-type': 'text/plain' } })
  t.same([stream.status, stream.body], [415, unsupported('text/plain')])
  const cancel = await rest(base, 'POST', '/tasks/x:cancel', { body: '', headers: { ...V1, 'content-type': 'text/plain' } })
  t.same([cancel.status, cancel.body], [415, unsupported('text/plain')], 'a declared type is checked even with an empty body')
})

t.test('a body that is not UTF-8 → 400 naming it; a Content-Encoding → 415 naming the coding', async t => {
  const post = (headers: Record<string, string>, bytes: Uint8Array<ArrayBuffer>) => fetch(`${base}/message:send`, { method: 'POST', headers: { ...V1, 'content-type': 'application/json', ...headers }, body: bytes })
  const latin1 = await post({}, new Uint8Array(Buffer.from(JSON.stringify({ message: userMessage('caf\u00e9') }), 'latin1')))
  t.equal(latin1.status, 400)
  t.same(await latin1.json(), { error: { code: 400, status: 'INVALID_ARGUMENT', message: 'Invalid JSON payload: the body is not UTF-8' } })
  const zipped = await post({ 'content-encoding': 'gzip' }, new Uint8Array(gzipSync(body())))
  t.equal(zipped.status, 415)
  t.same(await zipped.json(), { error: { code: 415, status: 'INVALID_ARGUMENT', message: 'Unsupported content coding gzip: send the body without a Content-Encoding' } })
  t.equal((await post({}, new Uint8Array(Buffer.from(body())))).status, 200, 'the next body is served')
})

t.test('a body without a Content-Type → 415; no body and no Content-Type is an empty request', async t => {
  const reply = await rawPost('/message:send', body())
  t.same(reply, { status: 415, body: unsupported('(none)') })
  const empty = await rawPost('/message:send', '')
  t.equal(empty.status, 400)
  t.same(empty.body.error.details[0].fieldViolations, [{ field: 'message', description: 'is required' }])
})

t.test('routes without a body ignore the Content-Type', async t => {
  const { task } = await restResult(base, 'POST', '/message:send', { body: { message: userMessage('x') } })
  t.equal((await rest(base, 'GET', `/tasks/${task.id}`, { headers: { ...V1, 'content-type': 'text/plain' } })).status, 200)
})

t.test('responses are application/a2a+json unless Accept prefers application/json', async t => {
  const typeFor = async (accept?: string) => {
    const headers: Record<string, string> = accept === undefined ? V1 : { ...V1, accept }
    return (await rest(base, 'GET', '/tasks', { headers })).headers.get('content-type')
  }
  t.equal(await typeFor(), A2A_JSON_UTF8)
  t.equal(await typeFor('*/*'), A2A_JSON_UTF8)
  t.equal(await typeFor('application/a2a+json'), A2A_JSON_UTF8)
  t.equal(await typeFor('application/json, application/a2a+json'), A2A_JSON_UTF8, 'a tie goes to application/a2a+json')
  t.equal(await typeFor('application/json;q=0.5, application/a2a+json'), A2A_JSON_UTF8)
  t.equal(await typeFor('text/html'), A2A_JSON_UTF8, 'neither acceptable: the binding\'s own type')
  t.equal(await typeFor('application/json'), 'application/json; charset=utf-8')
  t.equal(await typeFor('application/json, */*;q=0.1'), 'application/json; charset=utf-8')
  t.equal(await typeFor('application/*;q=0.2, application/json'), 'application/json; charset=utf-8')
  t.equal(await typeFor('application/a2a+json;q=0, application/json;q=0.1'), 'application/json; charset=utf-8')
})

t.test('error bodies follow Accept too; streams are text/event-stream whatever it says', async t => {
  const error = await rest(base, 'GET', '/tasks/missing', { headers: { ...V1, accept: 'application/json' } })
  t.equal(error.status, 404)
  t.equal(error.headers.get('content-type'), 'application/json; charset=utf-8')
  t.equal(error.body.error.status, 'NOT_FOUND')
  const unknownRoute = await rest(base, 'GET', '/tasks/a/b', { headers: { ...V1, accept: 'application/json' } })
  t.equal(unknownRoute.headers.get('content-type'), 'application/json; charset=utf-8')
  const stream = await restStream(base, 'POST', '/message:stream', { body: body(), headers: { ...V1, 'content-type': 'application/json', accept: 'application/json' } })
  t.equal(stream.contentType, 'text/event-stream')
})
