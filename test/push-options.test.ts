// The push options: checked once at registration, each error naming its option; the
// sender exists exactly when the card declares push notifications.
import Fastify from 'fastify'
import t from 'tap'
import { conformanceAgent, conformanceCard } from '../examples/agent.js'
import { a2aWebSocket, type A2APluginOptions } from '../lib/index.js'
import { call, result, startServer, userMessage } from './helpers/server.js'

const noPushCard = { ...conformanceCard, capabilities: { ...conformanceCard.capabilities, pushNotifications: false } }

async function register (options: Partial<A2APluginOptions>) {
  const fastify = Fastify()
  t.teardown(() => fastify.close())
  await fastify.register(a2aWebSocket, { executor: conformanceAgent, card: conformanceCard, ...options } as A2APluginOptions)
  return fastify
}

t.test('bad options fail registration with an error naming the option', async t => {
  const cases: Array<[Partial<A2APluginOptions>, string]> = [
    [{ card: noPushCard, push: {} }, 'push'],
    [{ push: { allow: 'x' as never } }, 'push.allow'],
    [{ push: { allow: [''] } }, 'push.allow'],
    [{ push: { allow: ['10.0.0.0/33'] } }, 'push.allow'],
    [{ push: { allow: ['10.0.0.0/8/1'] } }, 'push.allow'],
    [{ push: { timeout: 0 } }, 'push.timeout'],
    [{ push: { maxAttempts: 1.5 } }, 'push.maxAttempts'],
    [{ push: { retryDelay: -1 } }, 'push.retryDelay'],
    [{ push: { maxRetryDelay: 'x' as never } }, 'push.maxRetryDelay'],
    [{ push: { maxQueued: 0 } }, 'push.maxQueued'],
    [{ push: { maxConfigsPerTask: 0 } }, 'push.maxConfigsPerTask'],
    [{ push: { onDelivery: 'x' as never } }, 'push.onDelivery'],
    [{ push: { resolve: 1 as never } }, 'push.resolve'],
    // null or no object is refused, not read as the defaults
    [{ push: null as never }, 'push'],
    [{ push: 'fast' as never }, 'push'],
    [{ recoverTasks: 'yes' as never }, 'recoverTasks']
  ]
  for (const [options, name] of cases) {
    await t.rejects(register(options), { code: 'A2A_ERR_INVALID_OPTION', message: new RegExp(`^Invalid option ${name.replace('.', '\\.')}:`) }, name)
  }
})

t.test('a delay setTimeout cannot hold (over 2**31 - 1 ms, which would fire at once) fails registration', async t => {
  for (const name of ['timeout', 'retryDelay', 'maxRetryDelay'] as const) {
    await t.rejects(register({ push: { [name]: 2 ** 31 } }), { code: 'A2A_ERR_INVALID_OPTION', message: `Invalid option push.${name}: must be at most 2147483647 ms` }, name)
  }
  t.ok((await register({ push: { timeout: 2 ** 31 - 1, retryDelay: 2 ** 31 - 1, maxRetryDelay: 2 ** 31 - 1 } })).a2a.push, 'the longest is accepted')
})

t.test('good allow-list entries are accepted', async t => {
  const fastify = await register({ push: { allow: ['127.0.0.1', '10.0.0.0/8', '::1', 'fd00::/8', 'hooks.internal'] } })
  t.ok(fastify.a2a.push)
})

t.test('no push capability: no sender, and the push methods answer PushNotificationNotSupported', async t => {
  const server = await startServer({ card: noPushCard })
  t.teardown(() => server.close())
  t.equal(server.fastify.a2a.push, undefined)
  const task = (await result(server.endpoint, 'SendMessage', { message: userMessage('input') })).task
  const { error } = await call(server.endpoint, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: 'https://hooks.example/x' })
  t.equal(error.code, -32003)
})

t.test('push capability without push options: a sender with the defaults, SSRF guard on', async t => {
  const server = await startServer()
  t.teardown(() => server.close())
  t.ok(server.fastify.a2a.push, 'a sender is configured')
  const task = (await result(server.endpoint, 'SendMessage', { message: userMessage('input') })).task
  const { error } = await call(server.endpoint, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: 'http://127.0.0.1:9/x' })
  t.equal(error.code, -32602, 'loopback refused: nothing is allow-listed by default')
  t.equal(error.data[0].fieldViolations[0].field, 'url')
})
