// The optional /{tenant} path prefix of HTTP+JSON (spec §11.3, digest §6.3): every route
// under it, tasks scoped by it, the tenant reaching the call context, and the path
// winning over a tenant in the body or the query.
import t from 'tap'
import { conformanceCard } from '../examples/agent.js'
import type { AgentExecutor } from '../lib/index.js'
import { rest, restResult, restStream } from './helpers/rest.js'
import { eventually, result, startServer, userMessage } from './helpers/server.js'

const server = await startServer()
t.teardown(() => server.close())
const base = server.endpoint
const acme = `${base}/acme`

async function heldTask (at: string) {
  const { task } = await restResult(at, 'POST', '/message:send', { body: { message: userMessage('hold'), configuration: { returnImmediately: true } } })
  await eventually(async () => (await restResult(at, 'GET', `/tasks/${task.id}`)).status.state === 'TASK_STATE_WORKING')
  return task
}

t.test('every route is served under /{tenant}', async t => {
  const { task } = await restResult(acme, 'POST', '/message:send', { body: { message: userMessage('hello') } })
  t.equal(task.status.state, 'TASK_STATE_COMPLETED')
  const streamed = await restStream(acme, 'POST', '/message:stream', { body: { message: userMessage('stream 1') } })
  t.same(streamed.events.map(e => Object.keys(e.data)[0]), ['task', 'statusUpdate', 'artifactUpdate', 'statusUpdate'])
  t.same(await restResult(acme, 'GET', `/tasks/${task.id}`), task)
  t.same((await restResult(acme, 'GET', `/tasks?contextId=${task.contextId}`)).tasks.map((listed: any) => listed.id), [task.id])

  const held = await heldTask(acme)
  const viaGet = restStream(acme, 'GET', `/tasks/${held.id}:subscribe`)
  const viaPost = restStream(acme, 'POST', `/tasks/${held.id}:subscribe`)
  await eventually(() => server.fastify.a2a.bus.listenerCount() === 2)
  t.equal((await restResult(acme, 'POST', `/tasks/${held.id}:cancel`)).status.state, 'TASK_STATE_CANCELED')
  for (const subscription of await Promise.all([viaGet, viaPost])) {
    t.same(subscription.events.map(e => e.data.task?.status.state ?? e.data.statusUpdate.status.state), ['TASK_STATE_WORKING', 'TASK_STATE_CANCELED'])
  }

  const configs = `/tasks/${held.id}/pushNotificationConfigs`
  const created = await restResult(acme, 'POST', configs, { body: { id: 'hook', url: 'https://hooks.example.com/a' } })
  t.same(created, { id: 'hook', taskId: held.id, url: 'https://hooks.example.com/a' })
  t.same(await restResult(acme, 'GET', `${configs}/hook`), created)
  t.same(await restResult(acme, 'GET', configs), { configs: [created], nextPageToken: '' })
  t.equal((await rest(acme, 'DELETE', `${configs}/hook`)).text, '{}')
  t.equal((await restResult(acme, 'GET', '/extendedAgentCard')).name, conformanceCard.name)
})

t.test('tasks are scoped by the path tenant', async t => {
  const { task } = await restResult(acme, 'POST', '/message:send', { body: { message: userMessage('input') } })
  t.equal((await rest(acme, 'GET', `/tasks/${task.id}`)).status, 200)
  for (const other of [base, `${base}/globex`]) {
    t.equal((await rest(other, 'GET', `/tasks/${task.id}`)).status, 404, `${other}: not found`)
    t.equal((await rest(other, 'POST', `/tasks/${task.id}:cancel`)).status, 404)
    t.equal((await rest(other, 'POST', `/tasks/${task.id}/pushNotificationConfigs`, { body: { url: 'https://hooks.example.com/a' } })).status, 404)
    t.same((await restResult(other, 'GET', `/tasks?contextId=${task.contextId}`)).tasks, [])
  }
  t.equal((await rest(`${base}/globex`, 'GET', `/tasks/${task.id}:subscribe`)).status, 404)
})

t.test('a task created over JSON-RPC with params.tenant is the same tenant\'s over REST', async t => {
  const { task } = await result(base, 'SendMessage', { tenant: 'acme', message: userMessage('hello') })
  t.same(await restResult(acme, 'GET', `/tasks/${task.id}`), task)
  t.equal((await rest(base, 'GET', `/tasks/${task.id}`)).status, 404)
})

t.test('the tenant reaches the call context; the path wins over the body and the query', async t => {
  const reportsTenant: AgentExecutor = {
    async execute (context, events) {
      await events.artifact({ artifactId: 'tenant', parts: [{ text: context.tenant }] })
      await events.completed()
    }
  }
  const tenants = await startServer({ executor: reportsTenant, extendedCard: (context) => ({ ...conformanceCard, name: `card of ${context.tenant}` }) })
  t.teardown(() => tenants.close())
  const at = tenants.endpoint
  const seen = async (path: string, body: object) => (await restResult(at, 'POST', path, { body: { message: userMessage('x'), ...body } })).task.artifacts[0].parts[0].text
  t.equal(await seen('/acme/message:send', {}), 'acme')
  t.equal(await seen('/acme/message:send', { tenant: 'evil' }), 'acme', 'the path wins over the body')
  t.equal(await seen('/message:send', { tenant: 'bodyco' }), 'bodyco', 'without a path tenant the body\'s applies, as over JSON-RPC')
  t.equal(await seen('/message:send', {}), '', 'the default tenant')
  t.equal(await seen('/a%20b/message:send', {}), 'a b', 'the path segment is URL-decoded')
  t.equal((await restResult(at, 'GET', '/acme/extendedAgentCard')).name, 'card of acme')
  t.equal((await restResult(at, 'GET', '/extendedAgentCard?tenant=query')).name, 'card of query')
  t.equal((await restResult(at, 'GET', '/acme/extendedAgentCard?tenant=query')).name, 'card of acme', 'the path wins over the query')
})
