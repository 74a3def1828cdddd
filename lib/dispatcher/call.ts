// One A2A call, whatever the binding: the method table, params validated by the
// compiled schemas, the version and extension checks, then the handler. Every
// dispatcher goes through `CallRunner.run`, so each binding checks the same things in
// the same order: method (-32601), params (-32602), version (-32009), extensions.
import {
  ExtensionSupportRequiredError, VersionNotSupportedError, invalidParams
} from '../errors/index.js'
import type { CallContext } from '../handler/executor.js'
import type { RequestHandler } from '../handler/request-handler.js'
import * as requests from '../schema/requests.js'
import { compile, type Validator } from '../schema/validate.js'
import type { AgentCapabilities, StreamResponse } from '../schema/wire.js'

export type MethodKind = 'unary' | 'stream'

export interface MethodSpec {
  name: string
  kind: MethodKind
  validate: Validator<unknown>
  invoke (handler: RequestHandler, params: any, context: CallContext): Promise<unknown>
}

function method<P> (name: string, kind: MethodKind, validate: Validator<P>, invoke: (handler: RequestHandler, params: P, context: CallContext) => Promise<unknown>): MethodSpec {
  return { name, kind, validate, invoke }
}

/** The eleven v1.0 methods (spec §3), by their JSON-RPC names. */
export const methods: ReadonlyMap<string, MethodSpec> = new Map([
  method('SendMessage', 'unary', compile(requests.SendMessageRequest), (h, p, c) => h.sendMessage(p, c)),
  method('SendStreamingMessage', 'stream', compile(requests.SendMessageRequest), (h, p, c) => h.sendStreamingMessage(p, c)),
  method('GetTask', 'unary', compile(requests.GetTaskRequest), (h, p, c) => h.getTask(p, c)),
  method('ListTasks', 'unary', compile(requests.ListTasksRequest), (h, p, c) => h.listTasks(p, c)),
  method('CancelTask', 'unary', compile(requests.CancelTaskRequest), (h, p, c) => h.cancelTask(p, c)),
  method('SubscribeToTask', 'stream', compile(requests.SubscribeToTaskRequest), (h, p, c) => h.subscribeToTask(p, c)),
  method('CreateTaskPushNotificationConfig', 'unary', compile(requests.CreateTaskPushNotificationConfigRequest), (h, p, c) => h.createTaskPushNotificationConfig(p, c)),
  method('GetTaskPushNotificationConfig', 'unary', compile(requests.GetTaskPushNotificationConfigRequest), (h, p, c) => h.getTaskPushNotificationConfig(p, c)),
  method('ListTaskPushNotificationConfigs', 'unary', compile(requests.ListTaskPushNotificationConfigsRequest), (h, p, c) => h.listTaskPushNotificationConfigs(p, c)),
  method('DeleteTaskPushNotificationConfig', 'unary', compile(requests.DeleteTaskPushNotificationConfigRequest), (h, p, c) => h.deleteTaskPushNotificationConfig(p, c)),
  method('GetExtendedAgentCard', 'unary', compile(requests.GetExtendedAgentCardRequest), (h, p, c) => h.getExtendedAgentCard(p, c))
].map(spec => [spec.name, spec]))

const SUPPORTED_VERSION = /^1\.0(\.\d+)?$/

/** Runs around every call on every binding (and every frame of a WebSocket). */
export interface CallInterceptor {
  /**
   * Runs after the params are validated and before the handler. Throw an A2A error to
   * refuse the call (e.g. UnauthenticatedError); set `context.identity` to enrich it.
   */
  before? (context: CallContext, params: unknown): void | Promise<void>
}

export interface CallRunnerOptions {
  handler: RequestHandler
  capabilities: AgentCapabilities
  /** Treat a request without A2A-Version as 1.0 instead of 0.3. */
  allowMissingVersion: boolean
  interceptors: readonly CallInterceptor[]
}

export type CallResult = { kind: 'unary', value: unknown } | { kind: 'stream', events: AsyncIterableIterator<StreamResponse> }

export class CallRunner {
  readonly #options: CallRunnerOptions
  readonly #supported: Set<string>
  readonly #required: string[]

  constructor (options: CallRunnerOptions) {
    this.#options = options
    const extensions = options.capabilities.extensions ?? []
    this.#supported = new Set(extensions.flatMap(e => e.uri === undefined ? [] : [e.uri]))
    this.#required = extensions.flatMap(e => e.required === true && e.uri !== undefined ? [e.uri] : [])
  }

  /**
   * Validates `params` and runs the call. `context.extensions` holds the requested
   * extensions on entry and the activated ones on return. `version` is the requested
   * A2A-Version (undefined when absent).
   */
  async run (spec: MethodSpec, params: unknown, version: string | undefined, context: CallContext): Promise<CallResult> {
    const checked = spec.validate.check(params ?? {})
    if (!checked.ok) throw invalidParams(checked.violations)
    this.#checkVersion(version)
    context.extensions = this.#activate(context.extensions)
    const tenant = (checked.value as { tenant?: unknown }).tenant
    if (context.tenant === '' && typeof tenant === 'string') context.tenant = tenant
    for (const interceptor of this.#options.interceptors) await interceptor.before?.(context, checked.value)
    const value = await spec.invoke(this.#options.handler, checked.value, context)
    return spec.kind === 'stream'
      ? { kind: 'stream', events: value as AsyncIterableIterator<StreamResponse> }
      : { kind: 'unary', value }
  }

  #checkVersion (version: string | undefined): void {
    if (version === undefined) {
      // A missing A2A-Version means 0.3 (spec §3.6.2).
      if (this.#options.allowMissingVersion) return
      throw new VersionNotSupportedError('0.3 (no A2A-Version was sent)').with({ metadata: { requestedVersion: '0.3', supportedVersions: '1.0' } })
    }
    if (!SUPPORTED_VERSION.test(version)) {
      throw new VersionNotSupportedError(version).with({ metadata: { requestedVersion: version, supportedVersions: '1.0' } })
    }
  }

  #activate (requested: string[]): string[] {
    const activated = requested.filter(uri => this.#supported.has(uri))
    for (const uri of this.#required) {
      if (!activated.includes(uri)) throw new ExtensionSupportRequiredError(uri).with({ metadata: { extension: uri } })
    }
    return activated
  }
}
