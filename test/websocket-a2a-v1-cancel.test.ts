// Seed 001, cancelStream: `{"jsonrpc":"2.0","id":…,"cancelStream":true}` stops the stream
// in progress with that id, which ends with exactly one streamEnd and nothing after it;
// the task goes on; a cancelStream for an unknown id is ignored.
import t, { type Test } from 'tap'
import { eventually, startServer, userMessage } from './helpers/server.js'
import { clientFrame, frameReader, rawUpgrade } from './helpers/ws.js'
import { V1_PARAMS, connectV1, v1Url } from './helpers/ws-a2a-v1.js'

const server = await startServer()
t.teardown(() => server.close())
const cancelStream = (id: unknown) => ({ jsonrpc: '2.0', id, cancelStream: true })

/** A new connection with a `hold` stream under `id`, read up to its WORKING status. */
async function heldStream (t: Test, id: string) {
  const client = await connectV1(v1Url(server.origin))
  t.teardown(() => client.close())
  client.call(id, 'SendStreamingMessage', { message: userMessage('hold') })
  const task = (await client.nextFor(id)).result.task
  t.equal((await client.nextFor(id)).result.statusUpdate.status.state, 'TASK_STATE_WORKING')
  return { client, task }
}

t.test('cancelStream stops a `stream 1000` mid-way: exactly one streamEnd, no frame after it; the task goes on', async t => {
  const client = await connectV1(v1Url(server.origin))
  t.teardown(() => client.close())
  client.call('s', 'SendStreamingMessage', { message: userMessage('stream 1000') })
  const frames = []
  let chunks = 0
  for (;;) {
    const frame = await client.nextFor('s')
    frames.push(frame)
    if (frame.result?.artifactUpdate !== undefined && ++chunks === 3) client.send(cancelStream('s'))
    if (frame.streamEnd === true || frame.error !== undefined) break
  }
  t.same(frames.at(-1), { jsonrpc: '2.0', id: 's', streamEnd: true })
  t.ok(chunks < 1000, `stopped mid-way, after ${chunks} of 1000 chunks`)
  t.ok(frames.slice(0, -1).every(frame => frame.result !== undefined && frame.result.statusUpdate?.status.state !== 'TASK_STATE_COMPLETED'), 'the stream did not run to its end')
  t.same(await client.quiet(200), [], 'no frame after streamEnd')
  const task = frames[0].result.task
  await eventually(async () => (await client.request(`get-${Date.now()}`, 'GetTask', { id: task.id })).result.status.state === 'TASK_STATE_COMPLETED')
  t.pass('the task ran to completion')
})

t.test('a cancelled held stream releases its subscription; the task goes on until CancelTask', async t => {
  const { client, task } = await heldStream(t, 'h')
  client.send(cancelStream('h'))
  t.same(await client.nextFor('h'), { jsonrpc: '2.0', id: 'h', streamEnd: true })
  await eventually(() => server.fastify.a2a.bus.listenerCount() === 0)
  t.equal((await client.request('g', 'GetTask', { id: task.id })).result.status.state, 'TASK_STATE_WORKING', 'still running')
  t.equal((await client.request('c', 'CancelTask', { id: task.id })).result.status.state, 'TASK_STATE_CANCELED')
  t.same(await client.quiet(100), [], 'the cancelled stream saw nothing of it')
})

t.test('a cancelStream right behind its request (one TCP write): streamEnd is the stream\'s only frame', async t => {
  const { socket, response, rest } = await rawUpgrade(server.origin, ['Sec-WebSocket-Protocol: a2a.v1'])
  t.match(response, /^HTTP\/1\.1 101 /)
  t.teardown(() => socket.destroy())
  const reader = frameReader(socket, rest)
  const request = { jsonrpc: '2.0', id: 'early', method: 'SendStreamingMessage', params: { message: userMessage('stream 3') }, serviceParams: V1_PARAMS }
  socket.write(Buffer.concat([clientFrame(JSON.stringify(request)), clientFrame(JSON.stringify(cancelStream('early')))]))
  t.same(JSON.parse((await reader.next()).payload.toString()), { jsonrpc: '2.0', id: 'early', streamEnd: true })
  await new Promise(resolve => setTimeout(resolve, 200))
  t.same(reader.frames, [], 'nothing after it')
})

t.test('a cancelStream for an unknown id, or for a stream that has ended, is ignored', async t => {
  const client = await connectV1(v1Url(server.origin))
  t.teardown(() => client.close())
  client.send(cancelStream('nope'))
  client.send(cancelStream(42))
  t.same(await client.quiet(100), [])
  const frames = await client.stream('done', 'SendStreamingMessage', { message: userMessage('stream 1') })
  t.same(frames.at(-1), { jsonrpc: '2.0', id: 'done', streamEnd: true })
  client.send(cancelStream('done'))
  t.same(await client.quiet(100), [], 'no second streamEnd')
  client.call('u', 'SendMessage', { message: userMessage('sleep 100') })
  client.send(cancelStream('u'))
  t.equal((await client.nextFor('u')).result.task.status.state, 'TASK_STATE_COMPLETED', 'a unary call is no stream to cancel')
  t.equal(client.socket.readyState, client.socket.OPEN)
})

t.test('an id in use by a request in progress is refused for another; free again once that request ends', async t => {
  const { client, task } = await heldStream(t, 'd')
  for (const method of ['SendStreamingMessage', 'GetTask']) {
    client.call('d', method, method === 'GetTask' ? { id: task.id } : { message: userMessage('stream 1') })
    t.same(await client.nextFor('d'), {
      jsonrpc: '2.0', id: 'd', error: { code: -32600, message: 'Request payload validation error: id "d" is already used by a request in progress' }
    }, method)
  }
  t.equal((await client.request(7, 'GetTask', { id: task.id })).result.id, task.id, 'the number 7 is another id than "d"')
  client.send(cancelStream('d'))
  t.same(await client.nextFor('d'), { jsonrpc: '2.0', id: 'd', streamEnd: true }, 'one stream, one streamEnd')
  t.same(await client.quiet(100), [])
  t.equal((await client.request('d', 'GetTask', { id: task.id })).result.status.state, 'TASK_STATE_WORKING', 'the id is free again')
  t.equal((await client.request('c', 'CancelTask', { id: task.id })).result.status.state, 'TASK_STATE_CANCELED')
})

t.test('an id is free once its cancelStream is answered: a stream right behind the cancel (one TCP write) may take it', async t => {
  const { socket, response, rest } = await rawUpgrade(server.origin, ['Sec-WebSocket-Protocol: a2a.v1'])
  t.match(response, /^HTTP\/1\.1 101 /)
  t.teardown(() => socket.destroy())
  const reader = frameReader(socket, rest)
  const read = async () => JSON.parse((await reader.next()).payload.toString())
  const request = (text: string) => clientFrame(JSON.stringify({ jsonrpc: '2.0', id: 'r', method: 'SendStreamingMessage', params: { message: userMessage(text) }, serviceParams: V1_PARAMS }))
  socket.write(request('hold'))
  const held = (await read()).result.task
  t.equal((await read()).result.statusUpdate.status.state, 'TASK_STATE_WORKING')
  socket.write(Buffer.concat([clientFrame(JSON.stringify(cancelStream('r'))), request('stream 1')]))
  t.same(await read(), { jsonrpc: '2.0', id: 'r', streamEnd: true }, 'the held stream ends')
  const frames = [await read(), await read(), await read(), await read(), await read()]
  t.same(frames.map(frame => Object.keys(frame.result ?? frame).find(key => key !== 'jsonrpc' && key !== 'id')), ['task', 'statusUpdate', 'artifactUpdate', 'statusUpdate', 'streamEnd'], 'the new stream, whole, under the same id')
  t.not(frames[0].result.task.id, held.id)
  t.equal(frames[3].result.statusUpdate.status.state, 'TASK_STATE_COMPLETED')
  await new Promise(resolve => setTimeout(resolve, 100))
  t.same(reader.frames, [], 'nothing after it')
  socket.write(clientFrame(JSON.stringify({ jsonrpc: '2.0', id: 'c', method: 'CancelTask', params: { id: held.id }, serviceParams: V1_PARAMS })))
  t.equal((await read()).result.status.state, 'TASK_STATE_CANCELED', 'the held task went on until CancelTask')
})
