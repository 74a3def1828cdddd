// The A2A client: the eleven v1.0 methods (spec §3) over any transport, plus
// `resubscribe` for picking a task up again after a stream was cut (seed 000 §4).
import type {
  CancelTaskRequest, CreateTaskPushNotificationConfigRequest, DeleteTaskPushNotificationConfigRequest,
  GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse, ListTasksRequest, ListTasksResponse, SendMessageRequest, SubscribeToTaskRequest
} from '../schema/requests.js'
import type { AgentCard, AgentInterface, SendMessageResponse, StreamResponse, Task, TaskPushNotificationConfig } from '../schema/wire.js'
import type { CallOptions, StreamMethod, Transport, UnaryMethod } from './transport.js'

export interface A2AClientOptions {
  /** The card the client was made from (the factory sets it). */
  card?: AgentCard
  /** The card's interface the transport talks to (the factory sets it). */
  agentInterface?: AgentInterface
  /** Sent as `tenant` on every call that names none; default: the interface's tenant. */
  tenant?: string
}

export class A2AClient {
  readonly transport: Transport
  readonly card: AgentCard | undefined
  readonly agentInterface: AgentInterface | undefined
  readonly #tenant: string | undefined

  constructor (transport: Transport, options: A2AClientOptions = {}) {
    this.transport = transport
    this.card = options.card
    this.agentInterface = options.agentInterface
    this.#tenant = options.tenant ?? options.agentInterface?.tenant
  }

  sendMessage (params: SendMessageRequest, options?: CallOptions): Promise<SendMessageResponse> {
    return this.#call('SendMessage', params, options) as Promise<SendMessageResponse>
  }

  sendStreamingMessage (params: SendMessageRequest, options?: CallOptions): AsyncIterableIterator<StreamResponse> {
    return this.#stream('SendStreamingMessage', params, options)
  }

  getTask (params: GetTaskRequest, options?: CallOptions): Promise<Task> {
    return this.#call('GetTask', params, options) as Promise<Task>
  }

  listTasks (params: ListTasksRequest = {}, options?: CallOptions): Promise<ListTasksResponse> {
    return this.#call('ListTasks', params, options) as Promise<ListTasksResponse>
  }

  cancelTask (params: CancelTaskRequest, options?: CallOptions): Promise<Task> {
    return this.#call('CancelTask', params, options) as Promise<Task>
  }

  subscribeToTask (params: SubscribeToTaskRequest, options?: CallOptions): AsyncIterableIterator<StreamResponse> {
    return this.#stream('SubscribeToTask', params, options)
  }

  createTaskPushNotificationConfig (params: CreateTaskPushNotificationConfigRequest, options?: CallOptions): Promise<TaskPushNotificationConfig> {
    return this.#call('CreateTaskPushNotificationConfig', params, options) as Promise<TaskPushNotificationConfig>
  }

  getTaskPushNotificationConfig (params: GetTaskPushNotificationConfigRequest, options?: CallOptions): Promise<TaskPushNotificationConfig> {
    return this.#call('GetTaskPushNotificationConfig', params, options) as Promise<TaskPushNotificationConfig>
  }

  listTaskPushNotificationConfigs (params: ListTaskPushNotificationConfigsRequest, options?: CallOptions): Promise<ListTaskPushNotificationConfigsResponse> {
    return this.#call('ListTaskPushNotificationConfigs', params, options) as Promise<ListTaskPushNotificationConfigsResponse>
  }

  async deleteTaskPushNotificationConfig (params: DeleteTaskPushNotificationConfigRequest, options?: CallOptions): Promise<void> {
    await this.#call('DeleteTaskPushNotificationConfig', params, options)
  }

  getExtendedAgentCard (params: GetExtendedAgentCardRequest = {}, options?: CallOptions): Promise<AgentCard> {
    return this.#call('GetExtendedAgentCard', params, options) as Promise<AgentCard>
  }

  /**
   * Picks a task up again after its stream was cut (a StreamIncompleteError names the
   * task): SubscribeToTask, whose first event is the task's current snapshot, from which
   * to continue; the events in between are not replayed (seed 000 §4). On WebSocket the
   * call goes over a new connection, the transport opening one since the last one closed.
   */
  resubscribe (taskId: string, options?: CallOptions): AsyncIterableIterator<StreamResponse> {
    return this.subscribeToTask({ id: taskId }, options)
  }

  close (): Promise<void> {
    return this.transport.close()
  }

  #withTenant (params: object): object {
    return this.#tenant === undefined || 'tenant' in params ? params : { ...params, tenant: this.#tenant }
  }

  #call (method: UnaryMethod, params: object, options?: CallOptions): Promise<unknown> {
    return this.transport.call(method, this.#withTenant(params), options)
  }

  #stream (method: StreamMethod, params: object, options?: CallOptions): AsyncIterableIterator<StreamResponse> {
    return this.transport.stream(method, this.#withTenant(params), options)
  }
}
