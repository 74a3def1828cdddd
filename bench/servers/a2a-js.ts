// The peer: @a2a-js/sdk 1.3 on Express, mounted the documented way (`jsonRpcHandler`
// and `restHandler` over one DefaultRequestHandler with the in-memory task store), with
// an agent equivalent to examples/agent.ts for the two commands the bench sends:
// `stream <N>` appends N chunks to one artifact; anything else is echoed in an artifact.
// Both publish the task, `working`, the artifact event(s) and `completed`, as ours does.
import { once } from 'node:events'
import express from 'express'
import { TaskState, type AgentCard, type Artifact, type Message, type Part, type TaskStatus } from '@a2a-js/sdk'
import {
  AgentEvent, DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor, type ExecutionEventBus, type RequestContext
} from '@a2a-js/sdk/server'
import { UserBuilder, jsonRpcHandler, restHandler } from '@a2a-js/sdk/server/express'
import { PEER_JSONRPC_PATH, PEER_REST_PATH, startedOn, type StartedServer } from './common.js'

const textPart = (text: string): Part => ({ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' })
const artifact = (artifactId: string, text: string): Artifact => ({
  artifactId, name: '', description: '', parts: [textPart(text)], metadata: undefined, extensions: []
})
const status = (state: TaskState): TaskStatus => ({ state, message: undefined, timestamp: new Date().toISOString() })

const echoAgent: AgentExecutor = {
  async execute (context: RequestContext, bus: ExecutionEventBus) {
    const { taskId, contextId } = context
    const message: Message = context.userMessage
    const first = message.parts.find(part => part.content?.$case === 'text')?.content
    const text = first?.$case === 'text' ? first.value : ''
    const statusUpdate = (state: TaskState) => AgentEvent.statusUpdate({ taskId, contextId, status: status(state), metadata: undefined })
    const artifactUpdate = (chunk: Artifact, append: boolean, lastChunk: boolean) =>
      AgentEvent.artifactUpdate({ taskId, contextId, artifact: chunk, append, lastChunk, metadata: undefined })

    bus.publish(AgentEvent.task({
      id: taskId, contextId, status: status(TaskState.TASK_STATE_SUBMITTED), artifacts: [], history: [message], metadata: undefined
    }))
    bus.publish(statusUpdate(TaskState.TASK_STATE_WORKING))
    const [command, argument = ''] = text.split(' ')
    if (command === 'stream') {
      const count = Number.parseInt(argument, 10) || 0
      for (let i = 1; i <= count; i++) bus.publish(artifactUpdate(artifact('stream', `chunk ${i}`), i > 1, i === count))
    } else {
      bus.publish(artifactUpdate(artifact('echo', text), false, false))
    }
    bus.publish(statusUpdate(TaskState.TASK_STATE_COMPLETED))
    bus.finished()
  },
  async cancelTask () {}
}

export async function start (): Promise<StartedServer> {
  const app = express()
  const server = app.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = startedOn(server)
  const base = `http://127.0.0.1:${port}`
  const card: AgentCard = {
    name: 'a2a-js bench echo agent',
    description: 'Echoes the message in an artifact; `stream <N>` appends N chunks.',
    supportedInterfaces: [
      { url: base + PEER_JSONRPC_PATH, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
      { url: base + PEER_REST_PATH, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '1.0' }
    ],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'echo', name: 'Echo', description: 'echo, stream <N>', tags: ['echo'], examples: ['hello'], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: []
  }
  const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), echoAgent)
  app.use(PEER_JSONRPC_PATH, jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }))
  app.use(PEER_REST_PATH, restHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }))
  return { port }
}
