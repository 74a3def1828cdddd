// The official TypeScript SDK's client (@a2a-js/sdk) against a real listening server.
import t from 'tap'
import { ClientFactory } from '@a2a-js/sdk/client'
import { eventually, startServer } from './helpers/server.js'

const server = await startServer()
t.teardown(() => server.close())
const client = await new ClientFactory().createFromUrl(server.origin)
const text = (value: string) => ({ content: { $case: 'text' as const, value }, metadata: undefined, filename: '', mediaType: '' })
const message = (value: string) => ({ messageId: `interop-${value}-${Math.random()}`, role: 1, parts: [text(value)] }) as any

t.test('sendMessage returns the completed task with the echo artifact', async t => {
  const response: any = await client.sendMessage({ message: message('hello sdk') } as any)
  const task = response.payload?.value ?? response.task ?? response
  t.equal(task.status.state, 3, 'TASK_STATE_COMPLETED')
  t.equal(task.artifacts[0].artifactId, 'echo')
  t.same(task.artifacts[0].parts[0].content, { $case: 'text', value: 'hello sdk' })
})

t.test('sendMessageStream yields the task, the chunks and the final status', async t => {
  const cases: string[] = []
  const chunks: string[] = []
  for await (const event of client.sendMessageStream({ message: message('stream 3') } as any) as AsyncIterable<any>) {
    const payload = event.payload ?? event
    cases.push(payload.$case)
    if (payload.$case === 'artifactUpdate') chunks.push(payload.value.artifact.parts[0].content.value)
  }
  t.same(cases, ['task', 'statusUpdate', 'artifactUpdate', 'artifactUpdate', 'artifactUpdate', 'statusUpdate'])
  t.same(chunks, ['chunk 1', 'chunk 2', 'chunk 3'])
})

t.test('getTask and cancelTask', async t => {
  const response: any = await client.sendMessage({ message: message('hold'), configuration: { returnImmediately: true } } as any)
  const task = response.payload?.value ?? response
  await eventually(async () => ((await client.getTask({ id: task.id } as any)) as any).status.state === 2)
  const fetched: any = await client.getTask({ id: task.id } as any)
  t.equal(fetched.id, task.id)
  const canceled: any = await client.cancelTask({ id: task.id } as any)
  t.equal(canceled.status.state, 5, 'TASK_STATE_CANCELED')
})

t.test('an error reaches the SDK with its A2A reason', async t => {
  await t.rejects(client.getTask({ id: 'no-such-task' } as any), { reason: 'TASK_NOT_FOUND' } as unknown as Error)
})
