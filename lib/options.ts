// Plugin options: normalised and checked once, at registration. A bad option fails
// `register` with an error naming it.
import createError from '@fastify/error'
import type { EventBus } from './bus/types.js'
import type { AgentExecutor, CallContext } from './handler/executor.js'
import { compile } from './schema/validate.js'
import { AgentCardInput } from './schema/wire.js'
import type { PushConfigStore, TaskStore } from './store/types.js'

export const InvalidOptionError = createError('A2A_ERR_INVALID_OPTION', 'Invalid option %s: %s', 500, TypeError)

export type ExtendedCardProvider = (context: CallContext) => AgentCardInput | Promise<AgentCardInput>

export interface A2APluginOptions {
  /** The agent. */
  executor: AgentExecutor
  /** The public agent card, without `supportedInterfaces` (the plugin lists the bindings it serves). */
  card: AgentCardInput
  /**
   * Absolute base URL clients reach this server at, e.g. `https://agent.example.com`.
   * Default: the scheme and Host of each card request.
   */
  publicUrl?: string
  /** Path the A2A routes are mounted under, e.g. `/a2a`. The card stays at the host root. Default `''`. */
  prefix?: string
  /** The extended agent card, or a function of the caller that returns it. */
  extendedCard?: AgentCardInput | ExtendedCardProvider
  /** Default: an in-memory store (terminal tasks kept 1 h, at most 10,000 tasks). */
  taskStore?: TaskStore
  /** Default: an in-memory store. */
  pushConfigStore?: PushConfigStore
  /** Default: an in-memory bus. */
  bus?: EventBus
  /** Largest request body, in bytes. Default 4 MiB. */
  bodyLimit?: number
  /** Treat a request without A2A-Version as 1.0 instead of 0.3. Default false. */
  allowMissingVersion?: boolean
  /** Events a stream buffers for a slow reader before it ends with STREAM_LAGGED. Default 1024. */
  maxQueuedEvents?: number
  /** Cache-Control max-age of the agent card, in seconds. Default 300. */
  cardMaxAge?: number
  /**
   * Accept message parts whose `mediaType` the card does not declare (defaultInputModes
   * and the skills' inputModes). Default false: such a part is refused with -32005.
   */
  allowUndeclaredInputModes?: boolean
}

export interface NormalizedOptions {
  executor: AgentExecutor
  card: AgentCardInput
  publicUrl?: string
  prefix: string
  extendedCard?: ExtendedCardProvider
  taskStore?: TaskStore
  pushConfigStore?: PushConfigStore
  bus?: EventBus
  bodyLimit: number
  allowMissingVersion: boolean
  maxQueuedEvents: number
  cardMaxAge: number
  allowUndeclaredInputModes: boolean
}

export const validateCard = compile(AgentCardInput)

function checkCard (name: string, card: unknown): AgentCardInput {
  const checked = validateCard.check(card)
  if (!checked.ok) {
    const [first] = checked.violations
    throw new InvalidOptionError(first?.field === '' ? name : `${name}.${first?.field}`, first?.description)
  }
  return checked.value
}

function integer (name: string, value: unknown, fallback: number, min = 1): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) throw new InvalidOptionError(name, `must be an integer >= ${min}`)
  return value
}

function hasMethods (value: unknown, names: string[]): boolean {
  return typeof value === 'object' && value !== null && names.every(name => typeof (value as Record<string, unknown>)[name] === 'function')
}

export function normalizeOptions (options: A2APluginOptions): NormalizedOptions {
  if (!hasMethods(options.executor, ['execute'])) throw new InvalidOptionError('executor', 'must be an object with an execute(context, events) method')
  const card = checkCard('card', options.card)

  let publicUrl: string | undefined
  if (options.publicUrl !== undefined) {
    let url: URL | undefined
    try { url = new URL(options.publicUrl) } catch {}
    if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      throw new InvalidOptionError('publicUrl', 'must be an absolute http or https URL')
    }
    publicUrl = url.origin + url.pathname.replace(/\/+$/, '')
  }

  const prefix = options.prefix ?? ''
  if (typeof prefix !== 'string' || (prefix !== '' && !prefix.startsWith('/'))) throw new InvalidOptionError('prefix', 'must be a path starting with /')

  let extendedCard: ExtendedCardProvider | undefined
  if (typeof options.extendedCard === 'function') extendedCard = options.extendedCard
  else if (options.extendedCard !== undefined) {
    const fixed = checkCard('extendedCard', options.extendedCard)
    extendedCard = () => fixed
  }

  if (options.taskStore !== undefined && !hasMethods(options.taskStore, ['create', 'get', 'update', 'list'])) {
    throw new InvalidOptionError('taskStore', 'must implement create, get, update and list')
  }
  if (options.pushConfigStore !== undefined && !hasMethods(options.pushConfigStore, ['set', 'get', 'list', 'delete'])) {
    throw new InvalidOptionError('pushConfigStore', 'must implement set, get, list and delete')
  }
  if (options.bus !== undefined && !hasMethods(options.bus, ['publish', 'subscribe', 'listenerCount'])) {
    throw new InvalidOptionError('bus', 'must implement publish, subscribe and listenerCount')
  }
  for (const name of ['allowMissingVersion', 'allowUndeclaredInputModes'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'boolean') throw new InvalidOptionError(name, 'must be a boolean')
  }

  return {
    executor: options.executor,
    card,
    publicUrl,
    prefix: prefix.replace(/\/+$/, ''),
    extendedCard,
    taskStore: options.taskStore,
    pushConfigStore: options.pushConfigStore,
    bus: options.bus,
    bodyLimit: integer('bodyLimit', options.bodyLimit, 4 * 1024 * 1024),
    allowMissingVersion: options.allowMissingVersion ?? false,
    maxQueuedEvents: integer('maxQueuedEvents', options.maxQueuedEvents, 1024),
    cardMaxAge: integer('cardMaxAge', options.cardMaxAge, 300, 0),
    allowUndeclaredInputModes: options.allowUndeclaredInputModes ?? false
  }
}
