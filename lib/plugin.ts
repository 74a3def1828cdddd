// The plugin: options checked once, the handler built over the stores and the bus, the
// dispatchers registered under the prefix and the agent card at the host root.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { MemoryEventBus } from './bus/memory.js'
import type { EventBus } from './bus/types.js'
import { InvalidAgentResponseError } from './errors/index.js'
import type { CallContext } from './handler/executor.js'
import { RequestHandler } from './handler/request-handler.js'
import { AlreadyRegisteredError, InvalidOptionError, interceptorList, normalizeOptions, validateCard, type A2APluginOptions, type NormalizedOptions } from './options.js'
import { CallRunner } from './dispatcher/call.js'
import { AGENT_CARD_PATH, buildCard, cardRoute, renderCard, requestOrigin, type RenderedCard, type ServedBinding } from './dispatcher/card.js'
import { signAgentCard } from './card/signing.js'
import { JSONRPC_BINDING, jsonRpcDispatcher, logInternal } from './dispatcher/jsonrpc.js'
import {
  WEBSOCKET_BINDING_URI, closeUpgradesAnsweredOverHttp, guardHandshakes, refuseUpgrades, webSocketDispatcher
} from './dispatcher/websocket.js'
import { A2A_V1_BINDING, makeWebSocketServer } from './dispatcher/websocket-connection.js'
import fastifyWebsocket from '@fastify/websocket'
import fastifyCors, { type FastifyCorsOptions } from '@fastify/cors'
import { redactingRequestSerializer } from './interceptors/redact.js'
import { authentication } from './interceptors/auth.js'
import { rateLimit } from './interceptors/rate-limit.js'
import { tenancy } from './interceptors/tenancy.js'
import type { A2AInterceptor } from './interceptors/types.js'
import { REST_BINDING, REST_PATHS, restDispatcher } from './dispatcher/rest.js'
import type { AgentCard, AgentCardInput } from './schema/wire.js'
import { MemoryPushConfigStore, MemoryTaskStore } from './store/memory.js'
import { PushSender } from './push/sender.js'
import { ClusterMember } from './cluster/member.js'
import { failUnfinishedTasks } from './store/recovery.js'
import { shutDown, type ShutdownReport } from './shutdown.js'
import type { PushConfigStore, TaskStore } from './store/types.js'

export interface A2ADecorator {
  handler: RequestHandler
  taskStore: TaskStore
  pushConfigStore: PushConfigStore
  bus: EventBus
  /** Push delivery; undefined when the card declares no push notifications. */
  push?: PushSender
  /** This instance of the cluster; undefined without the `cluster` option. */
  cluster?: ClusterMember
  /** The public card as served to a client that reached the server at `httpBase` (`http(s)://host[/prefix]`). */
  cardFor (httpBase: string): AgentCard
  /** Appends an interceptor to the chain of every binding; it takes part from the next call on. */
  addInterceptor (interceptor: A2AInterceptor): void
  /** What the last `fastify.close()` did with the work in progress (also logged); undefined before. */
  lastShutdownReport?: ShutdownReport
}

declare module 'fastify' {
  interface FastifyInstance {
    a2a: A2ADecorator
  }
}

/** Cards built from a request's origin are cached for this many distinct origins. */
const CARD_CACHE_LIMIT = 32

/**
 * Servers whose upgrades an agent's own @fastify/websocket already routes. Its `upgrade`
 * listener routes each through the whole application, the routes of an agent in a sibling
 * context included; that agent's registration adds a listener of its own, which would route
 * every upgrade a second time (on a socket that has its response already: a warning each).
 */
const upgradesRouted = new WeakSet<object>()

async function a2aPlugin (fastify: FastifyInstance, rawOptions: A2APluginOptions): Promise<void> {
  if (fastify.hasDecorator('a2a')) throw new AlreadyRegisteredError()
  const options: NormalizedOptions = normalizeOptions(rawOptions)
  const { prefix } = options
  const pushConfigStore = options.pushConfigStore ?? new MemoryPushConfigStore()
  // The default task store deletes a task's configs with the task, when they are in memory too.
  const taskStore = options.taskStore ??
    new MemoryTaskStore({ pushConfigStore: pushConfigStore instanceof MemoryPushConfigStore ? pushConfigStore : undefined })
  const bus: EventBus = options.bus ?? new MemoryEventBus()
  if (bus.close !== undefined) fastify.addHook('onClose', async () => { await bus.close?.() })
  const bindings: ServedBinding[] = [
    { protocolBinding: JSONRPC_BINDING, url: (base) => base },
    { protocolBinding: REST_BINDING, url: (base) => base },
    { protocolBinding: WEBSOCKET_BINDING_URI, url: (base) => base.replace(/^http/, 'ws') },
    // The a2a.v1 dialect (seed 001) is served on the same route.
    ...(options.websocket.a2aV1 === undefined ? [] : [{ protocolBinding: A2A_V1_BINDING, url: (base: string) => base.replace(/^http/, 'ws') }])
  ]

  // The built-in chain: who the caller is, whether it is within its budget, which tenant;
  // then the user's interceptors. One list serves every binding; addInterceptor appends.
  const auth = options.auth === undefined ? undefined : authentication(options.auth)
  const limit = options.rateLimit === undefined ? undefined : rateLimit(options.rateLimit)
  const chain: A2AInterceptor[] = [
    ...(auth === undefined ? [] : [limit === undefined ? auth.interceptor : limit.counting(auth.interceptor)]),
    ...(limit === undefined ? [] : [limit]),
    ...(options.tenancy === undefined ? [] : [tenancy(options.tenancy)]),
    ...options.interceptors
  ]
  /** The card with the security schemes the configured authentication implies. */
  const secured = (card: AgentCardInput): AgentCardInput => auth === undefined
    ? card
    : {
        ...card,
        securitySchemes: { ...card.securitySchemes, ...auth.securitySchemes },
        securityRequirements: [...(card.securityRequirements ?? []), ...auth.securityRequirements]
      }
  const publicCard = secured(options.card)

  const httpBaseOf = (origin: string) => options.publicUrl ?? origin
  // Registered in a context with a prefix of its own, every route is under it too: the URLs name both.
  const mountPath = fastify.prefix + prefix
  const cardFor = (httpBase: string) => buildCard(publicCard, bindings, httpBase + mountPath)
  const originOf = (host: string | undefined) => `${fastify.initialConfig.https === undefined ? 'http' : 'https'}://${host ?? 'localhost'}`
  // One rendering per base URL clients reach the server at.
  const rendered = new Map<string, RenderedCard>()
  // With a fixed public URL the card is rendered now, once for every request, and signed: only
  // then (signing needs publicUrl), never a card whose URLs a request's Host chose. A key that
  // does not fit `alg` (or is no key) fails registration, not every card request.
  const { signing, publicUrl } = options
  if (publicUrl !== undefined) {
    let card = cardFor(publicUrl)
    if (signing !== undefined) {
      try {
        card = await signAgentCard(card, signing)
      } catch (error) {
        throw new InvalidOptionError('signing.key', `cannot sign with ${signing.alg}: ${error instanceof Error ? error.message : String(error)}`, { cause: error })
      }
    }
    rendered.set(publicUrl, renderCard(card))
  }

  const cluster = options.cluster === undefined ? undefined : new ClusterMember(options.cluster, bus, fastify.log)
  const push = options.push === undefined ? undefined : new PushSender(pushConfigStore, options.push, fastify.log, cluster?.outbox)
  const { extendedCard } = options
  const handler = new RequestHandler({
    executor: options.executor,
    taskStore,
    pushConfigStore,
    bus,
    capabilities: options.card.capabilities,
    extendedCard: extendedCard === undefined
      ? undefined
      : async (context: CallContext, origin?: string) => {
        const card = validateCard.check(await extendedCard(context))
        if (!card.ok) throw new InvalidAgentResponseError(`extended card: ${card.violations.map(v => `${v.field} ${v.description}`).join('; ')}`)
        return buildCard(secured(card.value), bindings, httpBaseOf(origin ?? originOf(context.serviceParams.host)) + mountPath)
      },
    maxQueuedEvents: options.maxQueuedEvents,
    executorTimeout: options.executorTimeout,
    busReadyTimeout: options.busReadyTimeout,
    finalStateRetry: options.finalStateRetry,
    onTaskEvent: push?.notify,
    checkPushConfig: push?.checkConfig,
    pushSettled: push === undefined ? undefined : (task) => push.recorded(task),
    pushConfigDeleted: push?.configDeleted,
    maxPushConfigsPerTask: options.push?.maxConfigsPerTask,
    cluster,
    inputModes: options.allowUndeclaredInputModes
      ? undefined
      : [...options.card.defaultInputModes, ...options.card.skills.flatMap(skill => skill.inputModes ?? [])],
    logger: fastify.log
  })
  const runner = new CallRunner({
    handler,
    capabilities: options.card.capabilities,
    allowMissingVersion: options.allowMissingVersion,
    interceptors: chain,
    logger: fastify.log
  })

  const addInterceptor = (interceptor: A2AInterceptor) => { chain.push(interceptorList([interceptor])[0] as A2AInterceptor) }
  const decorator: A2ADecorator = { handler, taskStore, pushConfigStore, bus, push, cluster, cardFor, addInterceptor }
  fastify.decorate('a2a', decorator)
  if (push !== undefined) fastify.addHook('onClose', async () => push.close())
  // Live before any route serves; it leaves at the end of the shutdown (below).
  if (cluster !== undefined) await cluster.start(handler, push)
  // Before any route serves: no executor of this process runs yet, so every unfinished task is an orphan.
  if (options.recoverTasks) {
    const failed = await failUnfinishedTasks(taskStore, push?.notify)
    if (failed > 0) fastify.log.info({ failed }, 'A2A recovery: tasks a dead process left running marked FAILED')
  }

  const { cors } = options
  const cardRouteOptions = {
    maxAge: options.cardMaxAge,
    cardFor: (request: FastifyRequest) => {
      const base = httpBaseOf(requestOrigin(request))
      let card = rendered.get(base)
      if (card === undefined) {
        card = renderCard(cardFor(base))
        if (rendered.size < CARD_CACHE_LIMIT) rendered.set(base, card)
      }
      return card
    }
  }
  // @fastify/cors always adds an `OPTIONS *` route to its context (scopedCors), so with no prefix
  // the card, at the root as well, takes the CORS of the A2A routes' context (below) rather than a second.
  const cardBesideA2ARoutes = cors !== undefined && prefix === ''
  // Fastify logs a request's URL before any hook: an API key in the query string is kept out,
  // on the card's route too (a client may send its key with every request).
  const apiKeyInQuery = options.auth?.apiKey?.in === 'query' ? options.auth.apiKey.name : undefined
  const logSerializers = apiKeyInQuery === undefined ? undefined : { req: redactingRequestSerializer(fastify.log, apiKeyInQuery) }
  if (!cardBesideA2ARoutes) {
    await fastify.register(async (cardContext) => {
      // The card is a simple GET: it needs the CORS headers, not a preflight route of its own.
      if (cors !== undefined) await scopedCors(cardContext, { ...corsDefaults(cors), preflight: false }, [])
      await cardContext.register(cardRoute, cardRouteOptions)
    }, { logSerializers })
  }

  const ws = options.websocket
  /** The largest message of either dialect, which `ws` checks before receiving it. */
  const maxMessageSize = Math.max(ws.maxMessageSize, ws.a2aV1?.maxMessageSize ?? 0)
  const wsServer = makeWebSocketServer({
    runner,
    maxInFlight: ws.maxInFlight,
    maxMessageSize: ws.maxMessageSize,
    maxBufferedBytes: ws.maxBufferedBytes,
    idleTimeout: ws.idleTimeout,
    maxJsonDepth: options.maxJsonDepth,
    a2aV1: ws.a2aV1,
    onError: (error, info) => logInternal(info.request ?? fastify, error)
  })
  // fastify.close(): new upgrades get 503 and new calls Unavailable; work in progress gets
  // its grace periods (lib/shutdown.ts); then every stream ends and every WebSocket gets 1001.
  const shutdown = async () => {
    refuseUpgrades(fastify.server)
    const report = await shutDown({ handler, runner, webSockets: wsServer, server: fastify.server, options: options.shutdown, push })
    handler.close()
    decorator.lastShutdownReport = report
    fastify.log.info({ shutdown: report }, 'A2A shutdown')
    // Once the work is drained, and before onClose hooks end the stores: deliveries still in
    // the outbox and tasks still held go to the other instances at once.
    if (cluster !== undefined) {
      push?.close()
      await cluster.stop()
    }
  }
  // @fastify/websocket registered by the user (before this plugin) serves the WebSocket
  // route as it is; otherwise this plugin registers its own (below).
  const ownWebSocketPlugin = !fastify.hasDecorator('websocketServer')
  if (!ownWebSocketPlugin) fastify.addHook('preClose', shutdown)
  if (ws.handshakeTimeout > 0) {
    const unguard = guardHandshakes(fastify.server, ws.handshakeTimeout)
    fastify.addHook('onClose', async () => unguard())
  }

  await fastify.register(async (a2a) => {
    if (cors !== undefined) {
      const apiKeyHeader = options.auth?.apiKey !== undefined && options.auth.apiKey.in !== 'query' ? options.auth.apiKey.name : undefined
      // JSON-RPC and the WebSocket route at the root path, the REST routes, and the card beside them.
      await scopedCors(a2a, corsDefaults(cors, apiKeyHeader), ['/', ...REST_PATHS, ...(cardBesideA2ARoutes ? [AGENT_CARD_PATH] : [])])
    }
    // In a context of its own, so that the dispatchers' hooks stay off it.
    if (cardBesideA2ARoutes) await a2a.register(async (cardContext) => cardContext.register(cardRoute, cardRouteOptions))
    const http = { runner, bodyLimit: options.bodyLimit, maxJsonDepth: options.maxJsonDepth, coalesceReplies: options.coalesceReplies, sseKeepAlive: options.sseKeepAlive }
    await a2a.register(jsonRpcDispatcher, http)
    await a2a.register(restDispatcher, http)
    // @fastify/websocket in a context of its own: its hooks (onRequest, onResponse) and the
    // wrapper it puts around route handlers then apply to the WebSocket route alone, not
    // to every route of the instance, the user's included.
    await a2a.register(async (wsContext) => {
      if (ownWebSocketPlugin) {
        const server = fastify.server
        const listening = server.listeners('upgrade')
        // Registered here all the same: its route wrapper and hooks serve this context's route.
        await wsContext.register(fastifyWebsocket, {
          // The subprotocol is selected by webSocketDispatcher, on this server or the user's.
          options: { maxPayload: maxMessageSize },
          preClose: async () => {
            await shutdown()
            wsContext.websocketServer.close()
          }
        })
        // On the instance as well, as when @fastify/websocket is registered there: a later
        // registration of it then fails (two would both route every upgrade).
        fastify.decorate('websocketServer', wsContext.websocketServer)
        fastify.decorate('injectWS', wsContext.injectWS)
        if (upgradesRouted.has(server)) {
          // Another agent's listener routes this agent's upgrades too (upgradesRouted).
          for (const listener of server.listeners('upgrade')) {
            if (!listening.includes(listener)) server.off('upgrade', listener as () => void)
          }
        } else {
          upgradesRouted.add(server)
          // After @fastify/websocket's own `upgrade` listener, which it needs to follow.
          const unclose = closeUpgradesAnsweredOverHttp(server)
          wsContext.addHook('onClose', async () => unclose())
        }
      }
      await wsContext.register(webSocketDispatcher, {
        server: wsServer,
        maxMessageSize,
        allowedOrigins: ws.allowedOrigins,
        requireOrigin: ws.requireOrigin,
        maxConnections: ws.maxConnections,
        allowMissingVersion: options.allowMissingVersion,
        interceptors: chain,
        a2aV1: ws.a2aV1,
        authenticate: auth?.upgrade
      })
    })
  }, { prefix, logSerializers })
}

/**
 * @fastify/cors on `context`, for the plugin's own paths alone. It always adds an `OPTIONS *`
 * route to its context, which would answer, or hand the 404 handler with its headers, a
 * preflight for any path under the context: at the root, every path of the application. That
 * route is taken out of CORS by the route option @fastify/cors honours (`config.cors: false`),
 * and each of `paths` gets an OPTIONS route of its own, whose preflight @fastify/cors's hook answers.
 */
async function scopedCors (context: FastifyInstance, options: FastifyCorsOptions, paths: readonly string[]): Promise<void> {
  context.addHook('onRoute', (route) => {
    if (route.method === 'OPTIONS' && route.routePath === '*') route.config = { ...route.config, cors: false } as typeof route.config
  })
  await context.register(fastifyCors, options)
  for (const path of paths) context.options(path, answerPreflight)
}

/** @fastify/cors's own OPTIONS handler: a preflight its hook did not end (`preflightContinue`) is sent, any other OPTIONS is no route's. */
function answerPreflight (request: FastifyRequest, reply: FastifyReply): void {
  if ((request as { corsPreflightEnabled?: boolean }).corsPreflightEnabled === true) reply.send()
  else reply.callNotFound()
}

/**
 * CORS for the A2A routes: the methods the bindings use (@fastify/cors allows GET, HEAD and
 * POST unless told, and REST deletes push configs), the A2A service parameters may be sent,
 * and the headers a client reads are exposed.
 */
function corsDefaults (options: FastifyCorsOptions, apiKeyHeader?: string): FastifyCorsOptions {
  const allowed = ['content-type', 'authorization', 'a2a-version', 'a2a-extensions', ...(apiKeyHeader === undefined ? [] : [apiKeyHeader.toLowerCase()])]
  const given = options.allowedHeaders
  return {
    origin: true,
    methods: ['GET', 'HEAD', 'POST', 'DELETE'],
    ...options,
    allowedHeaders: given === undefined ? allowed : [...new Set([...(typeof given === 'string' ? given.split(',').map(h => h.trim()) : given), ...allowed])],
    exposedHeaders: options.exposedHeaders ?? ['a2a-version', 'a2a-extensions', 'www-authenticate', 'retry-after']
  }
}

export const a2aWebSocket = fp(a2aPlugin, { fastify: '5.x', name: 'fastify-a2a' })
export { AGENT_CARD_PATH }
export default a2aWebSocket
