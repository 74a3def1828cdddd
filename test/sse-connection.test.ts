// The connection under an SSE response, on both HTTP bindings: a client that leaves at any
// point (while its call is checked, before the stream's first event, or after) releases its
// subscription; a client's `Connection: close` is honoured; a stream has no HEAD. Raw TCP
// clients, so that a client can leave at an exact point and the bytes are the server's own.
import net from 'node:net'
import t from 'tap'
import type { AgentExecutor } from '../lib/index.js'
import { eventually, result, startServer, userMessage, type TestServer } from './helpers/server.js'

/** A promise and its resolver: the tests open each gate at a chosen point. */
function gate (): { opened: Promise<void>, open: () => void } {
  let open!: () => void
  const opened = new Promise<void>(resolve => { open = resolve })
  return { opened, open }
}

/**
 * Sends one HTTP/1.1 request on a socket of its own; the bytes the server answers collect in
 * `received`. `leftServer` resolves once the server has seen the socket close (its response's
 * 'close' has fired).
 */
async function rawRequest (server: TestServer, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const accepted = new Promise<net.Socket>(resolve => server.fastify.server.once('connection', resolve))
  const socket = net.connect(Number(new URL(server.origin).port), '127.0.0.1')
  await new Promise<void>(resolve => socket.once('connect', resolve))
  const serverSide = await accepted
  const leftServer = new Promise<void>(resolve => serverSide.once('close', () => resolve()))
  const payload = body === undefined ? '' : JSON.stringify(body)
  const head = [`${method} ${path} HTTP/1.1`, 'host: 127.0.0.1', 'a2a-version: 1.0', ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)]
  if (body !== undefined) head.push('content-type: application/json', `content-length: ${Buffer.byteLength(payload)}`)
  socket.write(`${head.join('\r\n')}\r\n\r\n${payload}`)
  let received = ''
  socket.setEncoding('utf8')
  socket.on('data', (chunk: string) => { received += chunk })
  const closed = new Promise<void>(resolve => socket.once('close', () => resolve()))
  return { socket, closed, leftServer, received: () => received }
}

/** Held until CancelTask: the task the subscribe calls read. */
async function heldTask (server: TestServer): Promise<string> {
  const { task } = await result(server.endpoint, 'SendMessage', { message: userMessage('hold'), configuration: { returnImmediately: true } })
  await eventually(async () => (await result(server.endpoint, 'GetTask', { id: task.id })).status.state === 'TASK_STATE_WORKING')
  return task.id
}

const rpc = (method: string, params: unknown) => ({ jsonrpc: '2.0', id: 1, method, params })

for (const binding of ['JSON-RPC', 'HTTP+JSON'] as const) {
  const sendStreaming = (text: string): [method: string, path: string, body: unknown] => binding === 'JSON-RPC'
    ? ['POST', '/', rpc('SendStreamingMessage', { message: userMessage(text) })]
    : ['POST', '/message:stream', { message: userMessage(text) }]
  const subscribe = (id: string): [method: string, path: string, body: unknown] => binding === 'JSON-RPC'
    ? ['POST', '/', rpc('SubscribeToTask', { id })]
    : ['GET', `/tasks/${id}:subscribe`, undefined]

  t.test(`${binding}: a client that leaves before the stream's first event releases its subscription; the task goes on`, async t => {
    const started = gate()
    const firstEvent = gate()
    const executor: AgentExecutor = {
      async execute (context, events) {
        started.open()
        await firstEvent.opened
        await events.working()
        await new Promise(resolve => context.signal.addEventListener('abort', resolve, { once: true }))
      }
    }
    const server = await startServer({ executor })
    t.teardown(() => server.close())
    const { bus, handler } = server.fastify.a2a
    const [method, path, body] = sendStreaming('work')
    const client = await rawRequest(server, method, path, body)
    await started.opened
    t.equal(bus.listenerCount(), 1, 'the stream is subscribed, waiting for its first event')
    client.socket.resetAndDestroy()
    await client.leftServer
    await eventually(() => bus.listenerCount() === 0 && handler.openStreams === 0)
    firstEvent.open()
    await eventually(() => handler.activeTasks === 1)
    const [task] = (await result(server.endpoint, 'ListTasks', {})).tasks
    t.equal(task.status.state, 'TASK_STATE_WORKING', 'the task outlives its stream')
    t.equal(bus.listenerCount(), 0, 'no reader holds the task\'s events')
    t.equal((await result(server.endpoint, 'CancelTask', { id: task.id })).status.state, 'TASK_STATE_CANCELED')
    t.equal(client.received(), '', 'nothing was written to the client that left')
  })

  t.test(`${binding}: a client that leaves while its call is checked releases the stream the call then opens`, async t => {
    const verifying = gate()
    const verified = gate()
    let checks = 0
    const server = await startServer({
      auth: {
        bearer: {
          async verify (token) {
            // The second check is this test's subscribe; the first, the held task's SendMessage.
            if (++checks === 2) {
              verifying.open()
              await verified.opened
            }
            return token === 'good' ? { subject: 'alice' } : undefined
          }
        }
      }
    })
    t.teardown(() => server.close())
    const { bus, handler } = server.fastify.a2a
    const { task } = await (await fetch(server.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', authorization: 'Bearer good' },
      body: JSON.stringify(rpc('SendMessage', { message: userMessage('hold'), configuration: { returnImmediately: true } }))
    })).json().then(body => body.result)
    await eventually(async () => handler.runningExecutions === 1)
    const [method, path, body] = subscribe(task.id)
    const client = await rawRequest(server, method, path, body, { authorization: 'Bearer good' })
    await verifying.opened
    client.socket.resetAndDestroy()
    await client.leftServer
    // The stream is opened after the client left: the subscription is taken, then released.
    let subscribed = 0
    const subscribeOnBus = bus.subscribe.bind(bus)
    bus.subscribe = (...args: Parameters<typeof bus.subscribe>) => {
      subscribed++
      return subscribeOnBus(...args)
    }
    t.teardown(() => { bus.subscribe = subscribeOnBus })
    verified.open()
    await eventually(() => subscribed === 1)
    await eventually(() => bus.listenerCount() === 0 && handler.openStreams === 0)
    t.equal(client.received(), '', 'nothing was written to the client that left')
    await fetch(server.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', authorization: 'Bearer good' },
      body: JSON.stringify(rpc('CancelTask', { id: task.id }))
    })
  })
}

t.test('HTTP+JSON: HEAD of a subscription is no route: answered at once, no subscription taken', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  const { bus, handler } = server.fastify.a2a
  const taskId = await heldTask(server)
  const client = await rawRequest(server, 'HEAD', `/tasks/${taskId}:subscribe`)
  await eventually(() => /\r\n\r\n$/.test(client.received()))
  t.match(client.received(), /^HTTP\/1\.1 404 Not Found\r\n/)
  t.equal(bus.listenerCount(), 0)
  t.equal(handler.openStreams, 0)
  client.socket.destroy()
  t.equal((await result(server.endpoint, 'CancelTask', { id: taskId })).status.state, 'TASK_STATE_CANCELED')
})

for (const [binding, path, body] of [
  ['JSON-RPC', '/', rpc('SendStreamingMessage', { message: userMessage('stream 2') })],
  ['HTTP+JSON', '/message:stream', { message: userMessage('stream 2') }]
] as const) {
  t.test(`${binding}: an SSE response to \`Connection: close\` says so and closes the connection after its last event`, async t => {
    const server = await startServer()
    t.teardown(() => server.close())
    const client = await rawRequest(server, 'POST', path, body, { connection: 'close' })
    await client.closed
    const [head, ...events] = client.received().split('\r\n\r\n')
    t.match(head, /^HTTP\/1\.1 200 OK\r\n/)
    t.match(head, /\r\nconnection: close(\r\n|$)/i)
    t.notMatch(head, /keep-alive/i)
    t.match(events.join('\r\n\r\n'), /TASK_STATE_COMPLETED/, 'the stream was whole before the close')
  })
}

t.test('sseKeepAlive: a silent stream gets `: keep-alive` comment lines, which SSE readers skip; 0 sends none; the option is checked', async t => {
  for (const [keepAlive, expected] of [[50, true], [0, false]] as const) {
    const server = await startServer({ sseKeepAlive: keepAlive })
    t.teardown(() => server.close())
    const taskId = await heldTask(server)
    const client = await rawRequest(server, 'GET', `/tasks/${taskId}:subscribe`)
    await eventually(() => client.received().includes('data: '))
    if (expected) {
      await eventually(() => client.received().split(': keep-alive\n\n').length > 2)
      const body = client.received().split('\r\n\r\n').slice(1).join('\r\n\r\n')
      // Chunked: drop the chunk-size lines to read the event stream itself.
      const stream = body.split('\r\n').filter((_, index) => index % 2 === 1).join('')
      t.match(stream, /^data: \{"task":.*\}\n\n(: keep-alive\n\n)+$/, 'the snapshot, then comments only')
    } else {
      // Three of the other server's intervals: a comment would have come by now.
      await new Promise(resolve => setTimeout(resolve, 150))
      t.notMatch(client.received(), /\n: keep-alive\n/, 'sseKeepAlive: 0 sends none')
    }
    client.socket.destroy()
    t.equal((await result(server.endpoint, 'CancelTask', { id: taskId })).status.state, 'TASK_STATE_CANCELED')
  }
  await t.rejects(startServer({ sseKeepAlive: -1 }), { code: 'A2A_ERR_INVALID_OPTION', message: 'Invalid option sseKeepAlive: must be an integer >= 0' })
})
