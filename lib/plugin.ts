// The plugin: options checked once, the handler built over the stores and the bus, the
// dispatchers registered under the prefix and the agent card at the host root.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { MemoryEventBus } from './bus/memory.js'
import type { EventBus } from './bus/types.js'
import { InvalidAgentResponseError } from './errors/index.js'
import type { CallContext } from './handler/executor.js'
import { RequestHandler } from './handler/request-handler.js'
import { normalizeOptions, validateCard, type A2APluginOptions, type NormalizedOptions } from './options.js'
import { CallRunner } from './dispatcher/call.js'
import { AGENT_CARD_PATH, buildCard, cardRoute, renderCard, type ServedBinding } from './dispatcher/card.js'
import { JSONRPC_BINDING, jsonRpcDispatcher } from './dispatcher/jsonrpc.js'
import type { AgentCard } from './schema/wire.js'
import { MemoryPushConfigStore, MemoryTaskStore } from './store/memory.js'
import type { PushConfigStore, TaskStore } from './store/types.js'

export interface A2ADecorator {
  handler: RequestHandler
  taskStore: TaskStore
  pushConfigStore: PushConfigStore
  bus: EventBus
  /** The public card as served to a client that reached the server at `httpBase` (`http(s)://host[/prefix]`). */
  cardFor (httpBase: string): AgentCard
}

declare module 'fastify' {
  interface FastifyInstance {
    a2a: A2ADecorator
  }
}

/** Cards built from a request's origin are cached for this many distinct origins. */
const CARD_CACHE_LIMIT = 32

async function a2aPlugin (fastify: FastifyInstance, rawOptions: A2APluginOptions): Promise<void> {
  const options: NormalizedOptions = normalizeOptions(rawOptions)
  const { prefix } = options
  const taskStore = options.taskStore ?? new MemoryTaskStore()
  const pushConfigStore = options.pushConfigStore ?? new MemoryPushConfigStore()
  const bus = options.bus ?? new MemoryEventBus()
  const bindings: ServedBinding[] = [{ protocolBinding: JSONRPC_BINDING, url: (base) => base }]

  const httpBaseOf = (origin: string) => options.publicUrl ?? origin
  const cardFor = (httpBase: string) => buildCard(options.card, bindings, httpBase + prefix)
  const originOf = (host: string | undefined) => `${fastify.initialConfig.https === undefined ? 'http' : 'https'}://${host ?? 'localhost'}`

  const { extendedCard } = options
  const handler = new RequestHandler({
    executor: options.executor,
    taskStore,
    pushConfigStore,
    bus,
    capabilities: options.card.capabilities,
    extendedCard: extendedCard === undefined
      ? undefined
      : async (context: CallContext) => {
        const card = validateCard.check(await extendedCard(context))
        if (!card.ok) throw new InvalidAgentResponseError(`extended card: ${card.violations.map(v => `${v.field} ${v.description}`).join('; ')}`)
        return buildCard(card.value, bindings, httpBaseOf(originOf(context.serviceParams.host)) + prefix)
      },
    maxQueuedEvents: options.maxQueuedEvents,
    inputModes: options.allowUndeclaredInputModes
      ? undefined
      : [...options.card.defaultInputModes, ...options.card.skills.flatMap(skill => skill.inputModes ?? [])],
    logger: fastify.log
  })
  const runner = new CallRunner({ handler, capabilities: options.card.capabilities, allowMissingVersion: options.allowMissingVersion })

  fastify.decorate('a2a', { handler, taskStore, pushConfigStore, bus, cardFor })

  const rendered = new Map<string, ReturnType<typeof renderCard>>()
  await fastify.register(cardRoute, {
    maxAge: options.cardMaxAge,
    cardFor: (request: FastifyRequest) => {
      const base = httpBaseOf(`${request.protocol}://${request.host}`)
      let card = rendered.get(base)
      if (card === undefined) {
        card = renderCard(cardFor(base))
        if (rendered.size < CARD_CACHE_LIMIT) rendered.set(base, card)
      }
      return card
    }
  })

  await fastify.register(async (a2a) => {
    await a2a.register(jsonRpcDispatcher, { runner, bodyLimit: options.bodyLimit })
  }, { prefix })
}

export const a2aWebSocket = fp(a2aPlugin, { fastify: '5.x', name: 'fastify-a2a' })
export { AGENT_CARD_PATH }
export default a2aWebSocket
