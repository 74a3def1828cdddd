// What a user implements (the agent), and what the plugin hands it.
import type { SendMessageConfiguration } from '../schema/requests.js'
import type { Message, Part, Task, TaskState } from '../schema/wire.js'

/** Who is calling, and how: built by the dispatcher, enriched by interceptors. */
export interface CallContext {
  /** The binding the call came in on: `JSONRPC`, `HTTP+JSON`, or the WebSocket binding URI. */
  binding: string
  /** The A2A method, e.g. `SendMessage`. */
  method: string
  /**
   * Service parameters: lowercased name → value (spec §3.2.6), the server's `:`-names included.
   * Over HTTP a getter: made from the headers when first read, so a spread copy of the context has none.
   */
  serviceParams: Record<string, string>
  /** Tenant the call is scoped to; `''` is the default tenant. */
  tenant: string
  /** The caller's identity, set by an interceptor; undefined when none authenticated the call. */
  identity?: unknown
  /** The caller's scopes, set by an interceptor. */
  scopes?: string[]
  /** Extensions requested by the client (A2A-Extensions) that this agent supports. */
  extensions: string[]
}

export interface ExecutionContext {
  /** The user message of this turn. */
  message: Message
  /** The task this message continues, as it was when the turn started; undefined for a new task. */
  task?: Task
  /** The id of the task this turn works on (server-generated for a new task). */
  taskId: string
  contextId: string
  configuration?: SendMessageConfiguration
  /** The request's metadata. */
  metadata?: Record<string, unknown>
  /** The call's service parameters (CallContext), read through to it: a spread copy of the context has none. */
  readonly serviceParams: Record<string, string>
  identity?: unknown
  tenant: string
  extensions: string[]
  /** Aborted when the task is canceled. A getter (made when first read): a spread copy of the context has none. */
  readonly signal: AbortSignal
}

/** An agent message: plain text, or parts with optional fields. Ids and role are filled in. */
export type AgentMessageInput = string | (Partial<Omit<Message, 'parts' | 'role'>> & { parts: Part[] })

export interface ArtifactInput {
  /** Generated when absent; give one to append to the artifact later. */
  artifactId?: string
  name?: string
  description?: string
  parts: Part[]
  metadata?: Record<string, unknown>
  extensions?: string[]
}

export interface ArtifactOptions {
  /** Append these parts to the artifact with the same id sent before. */
  append?: boolean
  /** This is the artifact's last chunk. */
  lastChunk?: boolean
}

/**
 * How an executor reports progress. Every method resolves once the event is stored and
 * published; events after a terminal state are ignored.
 */
export interface ExecutionEvents {
  /** A status update, with an optional status message. */
  status (state: TaskState, message?: AgentMessageInput): Promise<void>
  working (message?: AgentMessageInput): Promise<void>
  inputRequired (message?: AgentMessageInput): Promise<void>
  authRequired (message?: AgentMessageInput): Promise<void>
  completed (message?: AgentMessageInput): Promise<void>
  failed (message?: AgentMessageInput): Promise<void>
  canceled (message?: AgentMessageInput): Promise<void>
  rejected (message?: AgentMessageInput): Promise<void>
  /** An artifact, or a chunk of one. */
  artifact (artifact: ArtifactInput, options?: ArtifactOptions): Promise<void>
  /** A direct reply (no task is created) or, once a task exists, an agent message on it. */
  message (message: AgentMessageInput): Promise<void>
}

export interface AgentExecutor {
  execute (context: ExecutionContext, events: ExecutionEvents): Promise<void> | void
  /**
   * Called on CancelTask after the execution's signal is aborted. Without it, or when it
   * leaves the task running, the plugin marks the task canceled.
   */
  cancel? (context: ExecutionContext, events: ExecutionEvents): Promise<void> | void
  /**
   * With `cluster: { onOrphan: 'resume' }`: takes on a SUBMITTED or WORKING task whose instance
   * died, on the instance that found it. `context.task` is the task as stored, `context.message`
   * its last user message. Behaves as `execute` from then on.
   */
  resume? (context: ExecutionContext, events: ExecutionEvents): Promise<void> | void
}
