// The eleven A2A operations over a task store, a push-config store and an event bus.
// No HTTP and no sockets here: dispatchers call these methods and render the results.
import { newId } from '../ids.js'
import { setImmediate as nextTurn } from 'node:timers/promises'
import {
  type A2AError, ContentTypeNotSupportedError, ExtendedAgentCardNotConfiguredError, InvalidAgentResponseError, isA2AError, PushNotificationNotSupportedError,
  TaskNotCancelableError, TaskNotFoundError, TaskTerminalError, UnavailableError, UnsupportedOperationError, invalidParams, isUnreachable, retryInfo, shuttingDown,
  toA2AError
} from '../errors/index.js'
import type { BusListener, EventBus } from '../bus/types.js'
import { ORPHAN_MESSAGE, type OrphanPolicy, type TaskKey } from '../cluster/types.js'
import type { ClusterMember } from '../cluster/member.js'
import type {
  CancelTaskRequest, CreateTaskPushNotificationConfigRequest, DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse, ListTasksRequest, ListTasksResponse, SendMessageRequest,
  SubscribeToTaskRequest
} from '../schema/requests.js'
import { LIST_ANY_STATE, timestampAfterMillis } from '../schema/requests.js'
import { compile } from '../schema/validate.js'
import {
  Artifact as ArtifactSchema, Message as MessageSchema, TaskState as TaskStateSchema,
  type AgentCapabilities, type AgentCard, type Artifact, type Message, type SendMessageResponse, type StreamResponse, type Task,
  type TaskPushNotificationConfig, type TaskState, type TaskStatus
} from '../schema/wire.js'
import type { ImmediateTaskStore, PushConfigStore, Scope, StoredPushConfig, TaskChange, TaskStore } from '../store/types.js'
import { EventQueue } from './event-queue.js'
import { artifactUpdateEvent, statusUpdateEvent } from './update-events.js'
import { awaiting, isPromise, runSteps, type MaybePromise, type Steps } from './steps.js'
import { LazyAbortController } from './lazy-abort.js'
import { DeadlineQueue } from './deadlines.js'
import { Wakeup } from './wakeup.js'
import type {
  AgentExecutor, AgentMessageInput, ArtifactInput, ArtifactOptions, CallContext, ExecutionContext, ExecutionEvents
} from './executor.js'
import { isInterrupted, isTerminal } from './states.js'
import { copyArtifact, copyOwn, over } from '../copy.js'
import { SteadyMap } from '../steady-map.js'
import { Fifo } from '../client/fifo.js'
import { topicOf } from '../bus/topic.js'

export interface Logger {
  error (object: unknown, message?: string): void
  warn (object: unknown, message?: string): void
}

export interface RequestHandlerOptions {
  executor: AgentExecutor
  taskStore: TaskStore
  pushConfigStore: PushConfigStore
  bus: EventBus
  /** The public card's capabilities: they gate streaming, push and the extended card. */
  capabilities: AgentCapabilities
  /**
   * The extended card for a caller; undefined when none is configured. `origin`: where the
   * client reached the server (`http(s)://host`), when the binding knows it.
   */
  extendedCard?: (context: CallContext, origin?: string) => AgentCard | Promise<AgentCard>
  /** Events a stream buffers for a slow reader before it ends with StreamLagged. */
  maxQueuedEvents: number
  /** An execution still running after this many ms is aborted and its task FAILED. Default 1 hour. */
  executorTimeout?: number
  /**
   * How long a stream of a task (SubscribeToTask, a resent message's stream) and a resent
   * SendMessage wait for the bus to follow the task (`EventBus.ready`), in ms; past it the call
   * is refused with Unavailable. CancelTask across instances waits for it within its `cancelTimeout`.
   * Default 5,000.
   */
  busReadyTimeout?: number
  /**
   * How long the final state an execution leaves its task in (FAILED, CANCELED) is tried again
   * when the store failed to write it, in ms; then the task is left as stored and an error
   * logged. 0 tries once. Default 300,000 (5 minutes).
   */
  finalStateRetry?: number
  /**
   * Media types the agent accepts (the card's input modes); a message part declaring
   * another `mediaType` is refused with ContentTypeNotSupported. Undefined accepts any.
   */
  inputModes?: readonly string[]
  /**
   * Called with every event of a task once it is stored, with the task's version after it
   * (push delivery hooks in here). Not called for a direct message reply, which belongs to no task.
   */
  onTaskEvent?: (event: StreamResponse, task: TaskRef, version?: number) => void
  /** Checks a push config before it is stored; throws (InvalidParams) to refuse it. The SSRF guard hooks in here. */
  checkPushConfig?: (config: StoredPushConfig) => Promise<void>
  /**
   * Settles once the push deliveries of the task's events so far are decided (their configs
   * looked up); undefined when none is pending. A new config waits for it (push delivery hooks in here).
   */
  pushSettled?: (task: TaskKey) => Promise<void> | undefined
  /** A push config was deleted: what is queued for it goes (push delivery hooks in here). */
  pushConfigDeleted?: (task: TaskKey, configId: string) => void
  /** Push configs one task may have (`push.maxConfigsPerTask`); undefined: no cap. */
  maxPushConfigsPerTask?: number
  /**
   * Set with the `cluster` option: turns hold leases, CancelTask reaches the instance running
   * the task, and SendMessage is deduplicated by messageId (README, *Several instances*).
   */
  cluster?: ClusterMember
  logger: Logger
}

/** A stream's subscription to its task's events, from a snapshot of the task on (RequestHandler.#subscribeTo). */
interface SnapshotSubscription {
  /** Reads the snapshot: the task as it is now. */
  read (): Promise<Task>
  /** The events held since the subscription go to the stream (after the snapshot), then each as it comes. */
  release (): void
}

/** Which task an event belongs to. */
export interface TaskRef {
  taskId: string
  contextId: string
  scope: Scope
}

export const DEFAULT_EXECUTOR_TIMEOUT = 3_600_000
export const DEFAULT_BUS_READY_TIMEOUT = 5_000
export const DEFAULT_FINAL_STATE_RETRY = 300_000
/** The first wait before a final state the store failed to write is tried again; doubled at each try, up to the next. Half of each is random. */
const FINAL_STATE_RETRY_DELAY_MS = 100
const FINAL_STATE_MAX_RETRY_DELAY_MS = 5_000
/** The RetryInfo of a call refused because the bus did not follow its task in time. */
const BUS_RETRY_MS = 1000
const DEFAULT_PAGE_SIZE = 50
/** The default tenant's scope, shared: a scope is never changed. */
const DEFAULT_SCOPE: Scope = Object.freeze({ tenant: '' })
/** What a change that ended at once with nothing resolves with: one promise for all. */
const RESOLVED: Promise<undefined> = Promise.resolve(undefined)
const MAX_PUSH_PAGE_SIZE = 100
const STOPPED_WITHOUT_FINAL_STATE = 'the agent stopped without a final state'
const validateAgentMessage = compile(MessageSchema, 'message')
const validateArtifact = compile(ArtifactSchema, 'artifact')
const validateState = compile(TaskStateSchema, 'state')
/** The ISO time, formatted once per millisecond however many events share it. */
let nowMs = -1
let nowIso = ''
const now = () => {
  const ms = Date.now()
  if (ms !== nowMs) {
    nowMs = ms
    nowIso = new Date(ms).toISOString()
  }
  return nowIso
}

/** The per-task state this process keeps while it changes a task: changes apply one at a time, in order. */
interface TaskRun {
  topic: string
  scope: Scope
  taskId: string
  contextId: string
  /**
   * The current state once the task exists. A run made from a read holds that read's, which may
   * be out of date, until one of its changes reads the task (#takeStoredState).
   */
  state?: TaskState
  /** A change is running (#enqueue); the changes queued meanwhile wait here, in order (made for the first). */
  busy: boolean
  /** A Fifo: an executor that emits without awaiting each event, on a store that is not immediate, queues them all. */
  waiting: Fifo<QueuedChange> | undefined
  /** Goes on with the queue once a change that waited for its store has settled (made for the first: #nextAfter). */
  next: (() => void) | undefined
  /** Mostly one: an array, not a Set (a Set's table for one entry, made and dropped every turn). */
  executions: Execution[]
}

interface QueuedChange {
  steps: Steps<unknown>
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
}

interface Execution {
  run: TaskRun
  controller: LazyAbortController
  userMessage: Message
  /** A direct reply was sent: the turn is over and no task is created. */
  replied: boolean
  /** The inline push config of the SendMessage that started the task. */
  pushConfig?: StoredPushConfig
  /** Aborted by `executorTimeout`: the task ends FAILED, not CANCELED. */
  timedOut: boolean
  /** What the executor was called with, once it is; shutdown hands it to the `cancel` hook. */
  context?: TurnContext
  /**
   * Why nothing more it emits is written, once the handler stopped waiting for it: `lost`, this
   * instance was taken for dead (cluster) and another ends the task; `abandoned`, shutdown gave
   * up on it (#abandonExecutions).
   */
  fenced: 'lost' | 'abandoned' | undefined
  /** Called once it is over and its task is left terminal or interrupted; with the error that fails the turn, if any. */
  ended: TurnEnded
}

/** A turn is over: `error` fails the call that started it (undefined when it ended well). */
type TurnEnded = (error?: unknown) => void

const noop = () => {}

interface Turn {
  resentTo?: undefined
  taskId: string
  scope: Scope
  run: TaskRun
  unsubscribe: () => void
}

/** The executor method an execution runs: a turn's `execute`, or `resume` of a task whose instance died. */
type ExecutorCall = 'execute' | 'resume'

/** Cluster: a messageId resent; `resentTo` is the task its first sending started, `reply` that turn's direct reply. */
interface Resend {
  resentTo: string
  reply?: Message
}

/** What #startTurn did: started the turn, or found that the messageId had already started one. */
type TurnStart = Turn | (Resend & { scope: Scope })

/** While a resend waits for the turn it repeats to create its task: how often it looks again, at most. */
const RESEND_POLL_MS = 250

function taskNotCancelable (task: Task): A2AError {
  return new TaskNotCancelableError(task.id).with({ metadata: { taskId: task.id, state: task.status.state } })
}

function terminalRefusal (action: string, taskId: string, state: TaskState): A2AError {
  return new UnsupportedOperationError(`cannot ${action} task ${taskId} in terminal state ${state}`).with({ metadata: { taskId, state } })
}

function taskNotFound (id: string): A2AError {
  return new TaskNotFoundError(id).with({ metadata: { taskId: id } })
}

/** An array of one for the first (a push onto [] would make room for seventeen). */
function addExecution (run: TaskRun, execution: Execution): void {
  if (run.executions.length === 0) run.executions = [execution]
  else run.executions.push(execution)
}

function dropExecution (run: TaskRun, execution: Execution): void {
  const { executions } = run
  const index = executions.indexOf(execution)
  if (index === -1) return
  // The last, mostly the only one: a pop, where a splice would make an array of what it removed.
  if (index === executions.length - 1) executions.pop()
  else executions.splice(index, 1)
}

/** A string that is set and not empty: an optional id the client may also send as ''. */
function hasText (value: string | undefined): value is string {
  return value !== undefined && value !== ''
}

/** Does an executor of the run's task run now: called (#launch, #resume), and not yet returned? */
function executorRuns (run: TaskRun): boolean {
  for (const execution of run.executions) if (execution.context !== undefined) return true
  return false
}

function keyOf (run: TaskRun): TaskKey {
  return { tenant: run.scope.tenant, taskId: run.taskId }
}

/** The call context of work the cluster hands this instance (a forwarded cancel, an orphan): no caller is here. */
function clusterContext (tenant: string, method: string): CallContext {
  return { binding: 'cluster', method, serviceParams: {}, tenant, extensions: [] }
}

/**
 * Does this event answer a blocking SendMessage (spec §3.2.2)? A direct reply does, and a
 * status that is terminal or interrupted; the task snapshot the turn starts with (an
 * interrupted task being resumed) does not.
 */
function answersTurn (event: StreamResponse): boolean {
  if (event.message !== undefined) return event.message.taskId === undefined
  const state = event.statusUpdate?.status.state
  return state !== undefined && (isTerminal(state) || isInterrupted(state))
}

/**
 * Does this event end the stream of the turn? As it answers a blocking call, but for
 * AUTH_REQUIRED: credentials may arrive out of band while the executor waits, so the
 * stream stays open until its execution ends (spec §7.6.1 SHOULD).
 */
function endsTurn (event: StreamResponse): boolean {
  return answersTurn(event) && event.statusUpdate?.status.state !== 'TASK_STATE_AUTH_REQUIRED'
}

function endsSubscription (event: StreamResponse): boolean {
  const state = event.statusUpdate?.status.state ?? event.task?.status.state
  return state !== undefined && isTerminal(state)
}

// A media type against a mode that may be a wildcard (any type, or any subtype); parameters are ignored.
function mediaTypeMatches (mode: string, type: string): boolean {
  const wanted = mode.toLowerCase().split(';')[0]?.trim() ?? ''
  const given = type.split(';')[0]?.trim() ?? ''
  if (wanted === '*/*' || wanted === given) return true
  return wanted.endsWith('/*') && given.startsWith(wanted.slice(0, -1))
}

function lastUserMessage (task: Task): Message {
  const history = task.history ?? []
  for (let i = history.length - 1; i >= 0; i--) if (history[i]?.role === 'ROLE_USER') return history[i] as Message
  return { messageId: newId(), role: 'ROLE_USER', parts: [{ text: '' }], taskId: task.id, contextId: task.contextId }
}

/** `{ ...message, taskId, contextId }` (lib/copy.ts: why not a spread). */
function withTask (message: Message, taskId: string, contextId: string): Message {
  return over({ messageId: message.messageId, role: message.role, parts: message.parts, taskId, contextId }, message)
}

/** The task an execution's first task event creates; `timestamp`, that event's when it is a status (no later than it). */
function newTask (execution: Execution, timestamp = now()): Task {
  const { run } = execution
  return {
    id: run.taskId,
    contextId: run.contextId,
    status: { state: 'TASK_STATE_SUBMITTED', timestamp },
    history: [execution.userMessage],
    // A slot for the artifacts a store adds: a key added later would need a second array.
    artifacts: undefined
  }
}

/**
 * The executor's artifact or message, copied with its `parts` array. The copy is stored and
 * sent after the executor's call resolves: it must not see the executor reuse its array, nor
 * keep that array alive (V8 then allocates the executor's `parts` literals in the old
 * generation, a stream's worth of garbage there: bench/README.md, thirty-fifth round).
 */
function copyWithParts (input: { parts: unknown }): unknown {
  const copy = copyOwn(input)
  if (Array.isArray(input.parts)) copy.parts = input.parts.slice()
  return copy
}

/** The executor's artifact as stored and sent: a copy of its own, with an id. */
function newArtifact (input: ArtifactInput): Artifact {
  const artifact = copyWithParts(input) as Artifact
  artifact.artifactId = input.artifactId ?? newId()
  return artifact
}

type StatusChange = Extract<TaskChange, { kind: 'status' }>
type ArtifactChange = Extract<TaskChange, { kind: 'artifact' }>

function artifactChange (artifact: Artifact, options: ArtifactOptions): ArtifactChange {
  return { kind: 'artifact', artifact, append: options.append === true }
}

/**
 * The task as returned to a client: history cut to `historyLength`, artifacts on request.
 * A live task's arrays are copied, as they are now; a terminal task never changes again,
 * so its arrays are shared.
 */
export function projectTask (task: Task, historyLength?: number, includeArtifacts = true): Task {
  const out: Task = { id: task.id, contextId: task.contextId, status: task.status }
  const final = isTerminal(task.status.state)
  if (includeArtifacts && task.artifacts !== undefined) out.artifacts = final ? task.artifacts : task.artifacts.map(copyArtifact)
  if (task.history !== undefined && historyLength !== 0) {
    out.history = historyLength !== undefined ? task.history.slice(-historyLength) : final ? task.history : task.history.slice()
  }
  if (task.metadata !== undefined) out.metadata = task.metadata
  return out
}

/**
 * What an executor is called with. A class, not an object literal: a literal with the
 * `signal` getter is built by the runtime at every call. The getter is on the prototype,
 * so `signal` is made only when read (LazyAbortController).
 */
class TurnContext implements ExecutionContext {
  message: Message
  task: Task | undefined
  taskId: string
  contextId: string
  configuration: SendMessageRequest['configuration']
  metadata: SendMessageRequest['metadata']
  identity: unknown
  tenant: string
  extensions: string[]
  readonly #controller: LazyAbortController
  /** Whose service parameters these are: read through, so that an HTTP call's are made only if read. */
  readonly #call: Pick<CallContext, 'serviceParams'>

  constructor (
    controller: LazyAbortController, message: Message, task: Task | undefined, taskId: string, contextId: string,
    call: Pick<CallContext, 'serviceParams' | 'identity' | 'tenant' | 'extensions'>, params?: Pick<SendMessageRequest, 'configuration' | 'metadata'>
  ) {
    this.message = message
    this.task = task
    this.taskId = taskId
    this.contextId = contextId
    this.configuration = params?.configuration
    this.metadata = params?.metadata
    this.#call = call
    this.identity = call.identity
    this.tenant = call.tenant
    this.extensions = call.extensions
    this.#controller = controller
  }

  get signal (): AbortSignal {
    return this.#controller.signal
  }

  get serviceParams (): Record<string, string> {
    return this.#call.serviceParams
  }

  /** The same context with the task as it is now. */
  withTask (task: Task | undefined): TurnContext {
    return new TurnContext(this.#controller, this.message, task, this.taskId, this.contextId, this, this)
  }
}

/** The handler's side of the executions' events. */
interface EventSink {
  status (execution: Execution, state: TaskState, message?: AgentMessageInput): Promise<void>
  artifact (execution: Execution, artifact: ArtifactInput, options?: ArtifactOptions): Promise<void>
  message (execution: Execution, input: AgentMessageInput): Promise<void>
}

/**
 * An execution's events. Each method is a getter that makes its function when read: an
 * executor may still take them off the object (`const { completed } = events`), and an
 * execution makes only the few it uses instead of all ten.
 */
class TurnEvents implements ExecutionEvents {
  #sink: EventSink
  readonly #execution: Execution

  constructor (sink: EventSink, execution: Execution) {
    this.#sink = sink
    this.#execution = execution
  }

  /**
   * The executor's call returned or threw: what it emits after goes to `late`, not this turn's
   * to write (a later turn may run the task by then). What it emitted before, awaited or not,
   * was handed on when emitted. (Not a method of the object the executor holds.)
   */
  static close (events: TurnEvents, late: EventSink): void {
    events.#sink = late
  }

  get status () { return (state: TaskState, message?: AgentMessageInput) => this.#sink.status(this.#execution, state, message) }
  get working () { return this.#to('TASK_STATE_WORKING') }
  get inputRequired () { return this.#to('TASK_STATE_INPUT_REQUIRED') }
  get authRequired () { return this.#to('TASK_STATE_AUTH_REQUIRED') }
  get completed () { return this.#to('TASK_STATE_COMPLETED') }
  get failed () { return this.#to('TASK_STATE_FAILED') }
  get canceled () { return this.#to('TASK_STATE_CANCELED') }
  get rejected () { return this.#to('TASK_STATE_REJECTED') }
  get artifact () { return (artifact: ArtifactInput, options?: ArtifactOptions) => this.#sink.artifact(this.#execution, artifact, options) }
  get message () { return (input: AgentMessageInput) => this.#sink.message(this.#execution, input) }

  #to (state: TaskState): (message?: AgentMessageInput) => Promise<void> {
    return (message) => this.#sink.status(this.#execution, state, message)
  }
}

export class RequestHandler {
  readonly #options: RequestHandlerOptions
  readonly #executorTimeout: number
  readonly #busReadyTimeout: number
  readonly #finalStateRetry: number
  /** The running executions, each dropped once it returns; those still held at `executorTimeout` time out. */
  readonly #deadlines: DeadlineQueue<Execution>
  /** The task store's immediate operations, when it has them (see #enqueue). */
  readonly #immediate: ImmediateTaskStore | undefined
  /** By topic; a SteadyMap: a run mostly lives for one call. */
  readonly #runs = new SteadyMap<string, TaskRun>()
  /**
   * The streams reading each task's events, by topic (see #statusEvent). By topic, not on
   * the run: a subscription outlives the run it started in, and paces every later turn.
   */
  readonly #followers = new Map<string, Set<EventQueue<StreamResponse>>>()
  /** Every stream handed to a dispatcher and not yet ended: shutdown ends what is left. */
  readonly #streams = new Set<EventQueue<StreamResponse>>()
  #ignoredEvents = 0
  /** Shutdown cancelled the executions (abortExecutions): no turn starts one any more. */
  #refusingTurns = false
  /** Turns checking their inline push config: shutdown stops their wait (#checkInlineConfig). */
  readonly #checking = new Set<() => void>()
  /** The streams that read their task's snapshot (#subscribeTo): each reads it again when the bus resubscribes. */
  readonly #resyncs = new Set<() => void>()
  /** Removes the handler's listener of the bus's resubscriptions. */
  readonly #stopResyncs: (() => void) | undefined
  /** The next try of each task's final state that the store failed to write (#retryEnd), with the task's id. */
  readonly #retries = new Map<NodeJS.Timeout, string>()
  /** The handler closed: a final state that fails is not tried again. */
  #closed = false
  /** Where every execution's events go (TurnEvents): made once. */
  readonly #sink: EventSink = {
    status: (execution, state, message) => this.#statusNow(execution, state, message) ?? this.#enqueue(execution.run, this.#statusEvent(execution, state, message)),
    artifact: (execution, artifact, options) => this.#artifactNow(execution, artifact, options) ?? this.#enqueue(execution.run, this.#artifactEvent(execution, artifact, options)),
    message: (execution, input) => this.#enqueue(execution.run, this.#messageEvent(execution, input))
  }

  /** Where the events of an execution whose call is over go (TurnEvents.close): ignored. */
  readonly #lateSink: EventSink = {
    status: (execution) => this.#lateEvent(execution, 'status'),
    artifact: (execution) => this.#lateEvent(execution, 'artifact'),
    message: (execution) => this.#lateEvent(execution, 'message')
  }

  constructor (options: RequestHandlerOptions) {
    this.#options = options
    this.#executorTimeout = options.executorTimeout ?? DEFAULT_EXECUTOR_TIMEOUT
    this.#deadlines = new DeadlineQueue(this.#executorTimeout, execution => this.#timedOut(execution))
    this.#immediate = options.taskStore.immediate
    this.#busReadyTimeout = options.busReadyTimeout ?? DEFAULT_BUS_READY_TIMEOUT
    this.#finalStateRetry = options.finalStateRetry ?? DEFAULT_FINAL_STATE_RETRY
    this.#stopResyncs = options.bus.onResubscribe?.(() => { for (const resync of this.#resyncs) resync() })
  }

  get bus (): EventBus {
    return this.#options.bus
  }

  /** Can a call be scoped to a tenant? Only when both stores keep tenants apart. */
  get isolatesTenants (): boolean {
    return this.#options.taskStore.isolatesTenants === true && this.#options.pushConfigStore.isolatesTenants === true
  }

  /** Tasks this process is changing right now. */
  get activeTasks (): number {
    return this.#runs.size
  }

  /** Events executors emitted after their task's terminal state: ignored, and counted here. */
  get ignoredEvents (): number {
    return this.#ignoredEvents
  }

  /** Executions (executor calls) in progress. */
  get runningExecutions (): number {
    let count = 0
    for (const run of this.#runs.values()) count += run.executions.length
    return count
  }

  /** Streams open now, on every binding. */
  get openStreams (): number {
    return this.#streams.size
  }

  /**
   * Shutdown: aborts the signal of every running execution and calls the executor's
   * `cancel` hook for it, as CancelTask does (its task then ends CANCELED); returns how many.
   * From now on a turn is refused as new calls are (#turnExecution): one whose call was still
   * checking its push config, or waiting for its task's lease, would start an execution that
   * nothing cancels.
   */
  abortExecutions (): number {
    this.#refusingTurns = true
    for (const stopWaiting of this.#checking) stopWaiting()
    let count = 0
    for (const run of this.#runs.values()) {
      for (const execution of run.executions) {
        execution.controller.abort()
        void this.#cancelOnShutdown(execution)
        count++
      }
    }
    return count
  }

  async #cancelOnShutdown (execution: Execution): Promise<void> {
    const { cancel } = this.#options.executor
    if (cancel === undefined || execution.context === undefined) return
    const { run } = execution
    try {
      const task = await this.#options.taskStore.get(run.taskId, run.scope)
      await cancel(execution.context.withTask(task === undefined ? undefined : projectTask(task)), this.#eventsFor(execution))
    } catch (error) {
      this.#options.logger.error({ err: error, taskId: run.taskId }, 'executor cancel failed')
    }
  }

  /**
   * Shutdown: stops waiting for executions that ignored their aborted signal. Each task is
   * marked CANCELED now, within `within` ms; whatever its executor emits later is ignored. An
   * execution that made no task yet, or whose task could not be marked in time (a store that
   * failed or does not answer), has its call answered Unavailable (shutting down). Returns how many.
   */
  async abandonExecutions (within: number): Promise<number> {
    const writes: Promise<void>[] = []
    /** The executions of each run whose CANCELED is not written yet: their turns end here if it is not in time. */
    const unwritten = new Map<TaskRun, Execution[]>()
    let count = 0
    for (const run of this.#runs.values()) {
      if (run.executions.length === 0) continue
      count += run.executions.length
      const turns: Execution[] = []
      for (const execution of run.executions) {
        execution.fenced = 'abandoned'
        if (run.state === undefined) this.#ended(execution, shuttingDown())
        else turns.push(execution)
      }
      unwritten.set(run, turns)
      run.executions.length = 0
      writes.push(this.#enqueue(run, this.#endTask(run, 'TASK_STATE_CANCELED', 'the server shut down before the agent finished')).then(() => {
        unwritten.delete(run)
      }, (error: unknown) => {
        this.#options.logger.error({ err: error, taskId: run.taskId }, 'could not cancel an abandoned task')
        this.#abandonedUnwritten(unwritten, run)
      }))
    }
    // Both promises are this call's own: the race leaves nothing on a promise that lives on.
    let timer: NodeJS.Timeout | undefined
    await Promise.race([Promise.all(writes), new Promise(resolve => { timer = setTimeout(resolve, within) })])
    clearTimeout(timer)
    for (const run of unwritten.keys()) {
      this.#options.logger.error({ taskId: run.taskId }, 'could not cancel an abandoned task within the shutdown\'s grace: left as stored')
      this.#abandonedUnwritten(unwritten, run)
    }
    return count
  }

  /** The CANCELED of an abandoned run was not written: its turns are answered as shutdown refuses a call. */
  #abandonedUnwritten (unwritten: Map<TaskRun, Execution[]>, run: TaskRun): void {
    for (const execution of unwritten.get(run) as Execution[]) execution.ended(shuttingDown())
    unwritten.delete(run)
  }

  /** Shutdown: fails every stream still open with `error`; returns how many. */
  failStreams (error: unknown): number {
    const streams = [...this.#streams]
    for (const stream of streams) stream.fail(error)
    return streams.length
  }

  /**
   * Shutdown, once the work is drained: the timer that bounds executions (`executorTimeout`) is
   * cleared, a final state still to be tried again is given up (the stores close next), and the
   * bus's resubscriptions are no longer followed.
   */
  close (): void {
    this.#closed = true
    this.#deadlines.close()
    for (const [timer, taskId] of this.#retries) {
      clearTimeout(timer)
      this.#options.logger.error({ taskId }, 'could not write the final state of a task before shutdown: left as stored')
    }
    this.#retries.clear()
    this.#stopResyncs?.()
  }

  // ---- work the cluster hands this instance (lib/cluster) ----------------------------------

  /** Another instance forwarded CancelTask for a task whose executor runs here. */
  async cancelForwarded (key: TaskKey, metadata?: Record<string, unknown>): Promise<void> {
    const scope = { tenant: key.tenant }
    // Ended meanwhile: the sender reads the outcome from the store.
    if (!this.#runsHere(scope, key.taskId)) return
    const task = await this.#options.taskStore.get(key.taskId, scope)
    if (task === undefined || isTerminal(task.status.state)) return
    await this.#cancelHere(task, scope, clusterContext(key.tenant, 'CancelTask'), metadata)
  }

  /**
   * The task's instance died and this one claimed it: a SUBMITTED or WORKING task ends FAILED
   * with a status message saying so, or `executor.resume` takes it on; others are left as they are.
   * `catchUp` gets the stored task first, as an event with its version (whatever its state):
   * the push configs that missed some of its events get it.
   */
  async endOrphan (key: TaskKey, policy: OrphanPolicy, catchUp?: (event: StreamResponse, task: TaskRef, version: number) => void): Promise<void> {
    const scope = { tenant: key.tenant }
    const { taskStore } = this.#options
    const snapshot = taskStore.getVersioned === undefined ? { task: await taskStore.get(key.taskId, scope) } : await taskStore.getVersioned(key.taskId, scope)
    if (snapshot?.task === undefined) return
    const { task } = snapshot
    if ('version' in snapshot) catchUp?.({ task: projectTask(task) }, { taskId: task.id, contextId: task.contextId as string, scope }, snapshot.version)
    if (isTerminal(task.status.state) || isInterrupted(task.status.state)) return
    const run = this.#runFor(scope, task)
    // No execution of it runs here (the claim says so): the stored state is the current one.
    run.state = task.status.state
    if (policy === 'resume') return await this.#resume(run, task)
    await this.#enqueue(run, this.#endTask(run, 'TASK_STATE_FAILED', ORPHAN_MESSAGE, true))
  }

  /**
   * This instance was taken for dead (its lease lapsed): other instances end its tasks. Every
   * execution is aborted and whatever it emits from now on is ignored. Returns how many.
   */
  loseExecutions (): number {
    let count = 0
    for (const run of this.#runs.values()) {
      for (const execution of run.executions) {
        execution.fenced = 'lost'
        execution.controller.abort()
        count++
      }
      run.executions.length = 0
    }
    return count
  }

  async sendMessage (params: SendMessageRequest, context: CallContext): Promise<SendMessageResponse> {
    const returnImmediately = params.configuration?.returnImmediately === true
    const historyLength = params.configuration?.historyLength
    let settle!: (response: SendMessageResponse | undefined) => void
    let fail!: (error: unknown) => void
    // Settled by the turn's answer, or by the end of its execution, whichever comes first.
    const outcome = new Promise<SendMessageResponse | undefined>((resolve, reject) => { settle = resolve; fail = reject })
    const started = this.#startTurn(params, context, (event) => {
      if (event.message !== undefined && event.message.taskId === undefined) settle({ message: event.message })
      else if (event.task !== undefined && returnImmediately) settle({ task: projectTask(event.task, historyLength) })
      else if (answersTurn(event)) settle(undefined)
    }, (error) => { if (error === undefined) settle(undefined); else fail(error) })
    const turn = isPromise(started) ? await started : started
    if (turn.resentTo !== undefined) return await this.#answerResend(turn, turn.scope, returnImmediately, historyLength)
    try {
      const response = await outcome
      if (response !== undefined) return response
      const read = this.#readTask(turn.taskId, turn.scope)
      const task = isPromise(read) ? await read : read
      // Gone already: a store whose TTL let the finished task go (or evicted it) before the answer.
      if (task === undefined) throw taskNotFound(turn.taskId)
      return { task: projectTask(task, historyLength) }
    } finally {
      turn.unsubscribe()
    }
  }

  async sendStreamingMessage (params: SendMessageRequest, context: CallContext): Promise<AsyncIterableIterator<StreamResponse>> {
    this.requireCapability('streaming')
    const queue = this.#openStream()
    let turn: TurnStart
    try {
      // Once the execution is over every event of the turn has been pushed.
      const started = this.#startTurn(params, context, (event) => {
        queue.push(event)
        if (endsTurn(event)) queue.end()
      }, (error) => { if (error === undefined) queue.end(); else queue.fail(error) })
      turn = isPromise(started) ? await started : started
    } catch (error) {
      // The stream was never handed out: it closes here.
      queue.return()
      throw error
    }
    if (turn.resentTo !== undefined) return await this.#followResend(turn, turn.scope, queue)
    this.#follow(turn.run.topic, queue)
    queue.onClose(turn.unsubscribe)
    return queue
  }

  async getTask (params: GetTaskRequest, context: CallContext): Promise<Task> {
    const { historyLength } = params
    // A store may read only the messages the answer shows; the memory store has them at hand.
    const task = historyLength === undefined || this.#options.taskStore.immediate !== undefined
      ? await this.#loadTask(params.id, context)
      : await this.#options.taskStore.get(params.id, this.#scope(context), { historyLength })
    if (task === undefined) throw taskNotFound(params.id)
    return projectTask(task, historyLength)
  }

  async listTasks (params: ListTasksRequest, context: CallContext): Promise<ListTasksResponse> {
    const pageSize = params.pageSize ?? DEFAULT_PAGE_SIZE
    const statusTimestampAfter = params.statusTimestampAfter === undefined ? undefined : timestampAfterMillis(params.statusTimestampAfter)
    if (params.statusTimestampAfter !== undefined && statusTimestampAfter === undefined) {
      throw invalidParams([{ field: 'statusTimestampAfter', description: 'must be a Timestamp of years 0001 to 9999, with no leap second and no suffix' }])
    }
    const page = await this.#options.taskStore.list({
      contextId: params.contextId === '' ? undefined : params.contextId,
      status: params.status === LIST_ANY_STATE ? undefined : params.status,
      statusTimestampAfter,
      pageSize,
      pageToken: params.pageToken,
      historyLength: params.historyLength,
      includeArtifacts: params.includeArtifacts === true
    }, this.#scope(context))
    return {
      tasks: page.tasks.map(task => projectTask(task, params.historyLength, params.includeArtifacts === true)),
      nextPageToken: page.nextPageToken,
      pageSize,
      totalSize: page.totalSize
    }
  }

  async cancelTask (params: CancelTaskRequest, context: CallContext): Promise<Task> {
    const scope = this.#scope(context)
    const task = await this.#loadTask(params.id, context)
    if (isTerminal(task.status.state)) throw taskNotCancelable(task)
    const { cluster } = this.#options
    const { metadata } = params
    if (cluster === undefined || this.#runsHere(scope, task.id)) return await this.#cancelHere(task, scope, context, metadata)
    const outcome = await this.#cancelElsewhere(cluster, task, scope, metadata)
    if (outcome === 'here') return await this.#cancelHere(task, scope, context, metadata)
    if (outcome !== 'claimed') return outcome
    try {
      return await this.#cancelHere(task, scope, context, metadata)
    } finally {
      cluster.drop({ tenant: scope.tenant, taskId: task.id })
    }
  }

  /** CancelTask on this instance: its executions are aborted, the `cancel` hook runs (with the request's `metadata`), the task ends CANCELED. */
  async #cancelHere (task: Task, scope: Scope, context: CallContext, metadata: Record<string, unknown> | undefined): Promise<Task> {
    const { executor } = this.#options
    try {
      const executions = this.#runFor(scope, task).executions.slice()
      for (const execution of executions) execution.controller.abort()
      if (executor.cancel !== undefined) {
        const execution = executions[0] ?? this.#newExecution(this.#runFor(scope, task), lastUserMessage(task))
        try {
          await executor.cancel(this.#executionContext(execution, projectTask(task), context, { metadata }), this.#eventsFor(execution))
        } catch (error) {
          this.#options.logger.error({ err: error, taskId: task.id }, 'executor cancel failed')
        }
      }
      const run = this.#runFor(scope, task)
      await this.#enqueue(run, this.#cancelChange(run))
      const ended = await this.#loadTask(task.id, context)
      // It ended otherwise meanwhile (its executor, or its cancel hook, completed it first): not canceled.
      if (ended.status.state !== 'TASK_STATE_CANCELED') throw taskNotCancelable(ended)
      return projectTask(ended)
    } finally {
      // The run made here for a task nothing runs goes however the call ends: a store read
      // that failed before the change was queued left it behind for good.
      const run = this.#runs.get(topicOf(scope.tenant, task.id))
      if (run !== undefined) this.#dropIfIdle(run)
    }
  }

  async subscribeToTask (params: SubscribeToTaskRequest, context: CallContext): Promise<AsyncIterableIterator<StreamResponse>> {
    this.requireCapability('streaming')
    const task = await this.#loadTask(params.id, context)
    this.#refuseTerminal(task, 'subscribe')
    const scope = this.#scope(context)
    const topic = topicOf(scope.tenant, task.id)
    const queue = this.#openStream()
    this.#follow(topic, queue)
    try {
      const subscription = this.#subscribeTo(queue, topic, task.id, scope, (event) => {
        queue.push(event)
        if (endsSubscription(event)) queue.end()
      })
      // Outside the task's changes: a bus slow to follow the task holds this call, not the task.
      await this.#busFollows(topic, task.id, queue)
      const run = this.#runFor(scope, task)
      await this.#enqueue(run, awaiting(async () => {
        // The snapshot is read between two changes of this process, so no local event is lost
        // or repeated; those of other instances are sorted out by their versions.
        const current = await subscription.read()
        this.#takeStoredState(run, current)
        this.#refuseTerminal(current, 'subscribe')
        queue.push({ task: current })
        subscription.release()
      }))
    } catch (error) {
      // The stream was never handed out: it closes here, with its subscription.
      queue.return()
      throw error
    }
    return queue
  }

  /**
   * Subscribes `deliver` to the task's events; `read()` then reads the task with its version
   * (and copies it, as it is at that version). Events arriving meanwhile wait until `release()`,
   * for the snapshot to go first. Those that arrived before the read are in it (an event is
   * published once stored) and are dropped; one the snapshot holds that arrived during the read
   * (another instance stored it before, and published it after) is dropped by its version,
   * before the release or after: the stream has each event once, in the snapshot or after it.
   *
   * When the bus resubscribes after a lost connection (EventBus.onResubscribe), events of other
   * instances may have been missed: the task is read again, and when it is at a later version
   * than any the stream has, the stream gets it whole (a `task` event; it ends the stream when
   * terminal), and the events it holds are dropped by their versions as after the first snapshot.
   */
  #subscribeTo (
    queue: EventQueue<StreamResponse>, topic: string, taskId: string, scope: Scope, deliver: (event: StreamResponse) => void
  ): SnapshotSubscription {
    const { bus } = this.#options
    let held: Array<[StreamResponse, number | undefined]> | undefined = []
    /** Events of this version or earlier are in a snapshot the stream has. */
    let snapshotVersion: number | undefined
    /** The latest version the stream has, in a snapshot or an event. */
    let latest: number | undefined
    /** The bus resubscribed before the release: the task is read again after it. */
    let resubscribed = false
    const pass = (event: StreamResponse, version: number | undefined) => {
      if (version === undefined || snapshotVersion === undefined) return deliver(event)
      if (version <= snapshotVersion) return
      latest = Math.max(latest as number, version)
      deliver(event)
    }
    queue.onClose(bus.subscribe(topic, (event, version) => { if (held === undefined) pass(event, version); else held.push([event, version]) }))
    const catchUp = async () => {
      const snapshot = await this.#loadSnapshot(taskId, scope)
      if (snapshot.version !== undefined && snapshot.version <= (latest as number)) return
      snapshotVersion = latest = snapshot.version
      deliver({ task: projectTask(snapshot.task) })
    }
    const resync = () => {
      if (held !== undefined) resubscribed = true
      else catchUp().catch((error: unknown) => queue.fail(error))
    }
    if (bus.onResubscribe !== undefined) {
      this.#resyncs.add(resync)
      queue.onClose(() => this.#resyncs.delete(resync))
    }
    return {
      read: async () => {
        (held as unknown[]).length = 0
        const snapshot = await this.#loadSnapshot(taskId, scope)
        snapshotVersion = latest = snapshot.version
        return projectTask(snapshot.task)
      },
      release: () => {
        const waiting = held as Array<[StreamResponse, number | undefined]>
        held = undefined
        for (const [event, version] of waiting) pass(event, version)
        if (resubscribed) resync()
      }
    }
  }

  /**
   * Waits until events other instances publish on `topic` reach this process (EventBus.ready),
   * for at most `busReadyTimeout`: past it the call is refused with Unavailable, and once shutdown
   * ended `queue` (the stream the wait is for) with the shutdown's refusal.
   */
  async #busFollows (topic: string, taskId: string, queue?: EventQueue<StreamResponse>): Promise<void> {
    const outcome = await this.#busReady(topic, this.#busReadyTimeout, queue)
    if (outcome === 'closed') throw shuttingDown()
    if (outcome === 'late') {
      throw new UnavailableError(`the event bus did not follow task ${taskId} within ${this.#busReadyTimeout} ms`)
        .with({ metadata: { taskId }, details: [retryInfo(BUS_RETRY_MS)] })
    }
  }

  /** EventBus.ready, bounded: `ready` (or no such wait on this bus), `late` after `ms`, `closed` once `queue` closed first. */
  async #busReady (topic: string, ms: number, queue?: EventQueue<StreamResponse>): Promise<'ready' | 'late' | 'closed'> {
    const ready = this.#options.bus.ready?.(topic)
    if (ready === undefined) return 'ready'
    let timer: NodeJS.Timeout | undefined
    // Every promise here is this call's own (ready() makes one per call): nothing is left on one that lives on.
    const outcome = await new Promise<'ready' | 'late' | 'closed'>((resolve, reject) => {
      timer = setTimeout(resolve, ms, 'late')
      ready.then(() => resolve('ready'), reject)
      queue?.onClose(() => resolve('closed'))
    }).finally(() => clearTimeout(timer))
    return outcome
  }

  async createTaskPushNotificationConfig (params: CreateTaskPushNotificationConfigRequest, context: CallContext): Promise<TaskPushNotificationConfig> {
    this.requireCapability('pushNotifications')
    const task = await this.#loadTask(params.taskId, context)
    const config = this.#pushConfig(params, task.id)
    await this.#options.checkPushConfig?.(config)
    const scope = this.#scope(context)
    // One of the task's changes (#storeConfig counts its configs): two creations cannot both find room for one.
    await this.#enqueue(this.#runFor(scope, task), awaiting(async () => {
      // Read before the config is stored: an event racing its creation may be caught up, never missed.
      const version = this.#options.cluster === undefined ? undefined : (await this.#options.taskStore.getVersioned?.(task.id, scope))?.version
      await this.#storeConfig(config, scope)
      if (version !== undefined) await this.#options.cluster?.markConfig({ tenant: scope.tenant, taskId: task.id }, config.id as string, version)
    }))
    return config
  }

  async getTaskPushNotificationConfig (params: GetTaskPushNotificationConfigRequest, context: CallContext): Promise<TaskPushNotificationConfig> {
    this.requireCapability('pushNotifications')
    await this.#loadTask(params.taskId, context)
    const config = await this.#options.pushConfigStore.get(params.taskId, params.id, this.#scope(context))
    if (config === undefined) {
      throw new TaskNotFoundError(`${params.taskId} has no push notification config ${params.id}`)
        .with({ metadata: { taskId: params.taskId, configId: params.id } })
    }
    return config
  }

  async listTaskPushNotificationConfigs (params: ListTaskPushNotificationConfigsRequest, context: CallContext): Promise<ListTaskPushNotificationConfigsResponse> {
    this.requireCapability('pushNotifications')
    await this.#loadTask(params.taskId, context)
    const pageSize = params.pageSize === undefined || params.pageSize === 0 ? MAX_PUSH_PAGE_SIZE : Math.min(params.pageSize, MAX_PUSH_PAGE_SIZE)
    return await this.#options.pushConfigStore.list(params.taskId, { pageSize, pageToken: params.pageToken }, this.#scope(context))
  }

  async deleteTaskPushNotificationConfig (params: DeleteTaskPushNotificationConfigRequest, context: CallContext): Promise<Record<string, never>> {
    this.requireCapability('pushNotifications')
    await this.#loadTask(params.taskId, context)
    const scope = this.#scope(context)
    await this.#options.pushConfigStore.delete(params.taskId, params.id, scope)
    // Lookups of earlier events may still queue deliveries for it: once they are done, those go too.
    const task = { tenant: scope.tenant, taskId: params.taskId }
    await this.#options.pushSettled?.(task)
    this.#options.pushConfigDeleted?.(task, params.id)
    return {}
  }

  async getExtendedAgentCard (_params: unknown, context: CallContext, origin?: string): Promise<AgentCard> {
    this.requireCapability('extendedAgentCard')
    if (this.#options.extendedCard === undefined) throw new ExtendedAgentCardNotConfiguredError()
    return await this.#options.extendedCard(context, origin)
  }

  // ---- turns and executions -----------------------------------------------------------

  /**
   * Checks the message against its task, subscribes `listener` to the task's events and
   * starts the executor. The listener's first event is the task (or the direct reply);
   * `ended` is called once the execution is over.
   */
  #startTurn (params: SendMessageRequest, context: CallContext, listener: BusListener, ended: TurnEnded): MaybePromise<TurnStart> {
    const { message } = params
    this.#checkMediaTypes(message)
    const inlinePush = params.configuration?.taskPushNotificationConfig
    if (inlinePush !== undefined) this.requireCapability('pushNotifications')
    // A new task on one instance, with no push config to check first: nothing to wait for, no steps.
    if (!hasText(message.taskId) && inlinePush === undefined && this.#options.cluster === undefined) {
      return this.#newTaskTurn(params, context, listener, ended, newId())
    }
    return runSteps(this.#turnStart(params, context, listener, ended))
  }

  /** Steps, so that a turn on the memory store starts without a promise (lib/handler/steps.ts). */
  * #turnStart (params: SendMessageRequest, context: CallContext, listener: BusListener, ended: TurnEnded): Steps<TurnStart> {
    const { message } = params
    const scope = this.#scope(context)
    let existing: Task | undefined
    if (hasText(message.taskId)) existing = yield this.#loadTask(message.taskId, context)
    const taskId = existing?.id ?? newId()
    const { cluster } = this.#options
    if (cluster === undefined) return yield * this.#beginTurn(params, context, listener, ended, existing, taskId)
    const key = { tenant: scope.tenant, taskId }
    // Before the checks of the task: a resend of a message that ended its task gets that task.
    const resend: Resend | undefined = yield this.#claimTurn(cluster, key, message.messageId)
    if (resend !== undefined) return { ...resend, scope }
    try {
      return yield * this.#beginTurn(params, context, listener, ended, existing, taskId)
    } catch (error) {
      cluster.drop(key)
      yield cluster.forgetMessage(key, message.messageId)
      throw error
    }
  }

  * #beginTurn (
    params: SendMessageRequest, context: CallContext, listener: BusListener, ended: TurnEnded, existing: Task | undefined, taskId: string
  ): Steps<Turn> {
    const { message } = params
    const inlinePush = params.configuration?.taskPushNotificationConfig
    if (existing !== undefined) {
      this.#refuseTerminal(existing, 'send a message to')
      if (hasText(message.contextId) && message.contextId !== existing.contextId) {
        throw invalidParams([{ field: 'message.contextId', description: `does not match the context of task ${existing.id}` }])
      }
    }
    const inlineConfig = inlinePush === undefined ? undefined : this.#pushConfig(inlinePush, taskId)
    if (inlineConfig !== undefined) yield this.#checkInlineConfig(inlineConfig)
    if (existing === undefined) return this.#newTaskTurn(params, context, listener, ended, taskId, inlineConfig)

    const scope = this.#scope(context)
    const execution = this.#turnExecution(scope, existing, message, ended, inlineConfig)
    const { run, userMessage } = execution
    let unsubscribe = noop
    let taskAtStart: Task | undefined
    try {
      yield this.#enqueue(run, awaiting(async () => {
        const task = await this.#loadTask(taskId, context)
        this.#takeStoredState(run, task)
        this.#refuseTerminal(task, 'send a message to')
        // The config first: refused (the task has its most configs), the message is not added either.
        if (execution.pushConfig !== undefined) await this.#storeConfig(execution.pushConfig, scope)
        // Copied before the store records the message, then given it: whether `task` is the store's
        // own object (which the update changes) or a row read from a database, it holds it once.
        const atStart = projectTask(task)
        await this.#options.taskStore.update(taskId, { kind: 'history', message: userMessage }, scope).catch((error: unknown) => {
          // A process sharing the store ended the task since the read: refused as any terminal task is.
          throw error instanceof TaskTerminalError ? terminalRefusal('send a message to', taskId, error.state) : error
        })
        if (atStart.history === undefined) atStart.history = [userMessage]
        else atStart.history.push(userMessage)
        taskAtStart = atStart
        listener({ task: taskAtStart })
        unsubscribe = this.#options.bus.subscribe(run.topic, listener)
      }))
    } catch (error) {
      dropExecution(run, execution)
      // Queued before the run may go: a turn starting meanwhile finds this change ahead of its own.
      this.#leftWithoutExecution(run)
      this.#dropIfIdle(run)
      throw error
    }
    return this.#launch(execution, taskAtStart, context, params, unsubscribe)
  }

  /**
   * The check of a turn's inline push config: a lookup of its host, of up to 5 s. Shutdown stops
   * waiting for it, so that the turn is refused (#turnExecution) and answered within its grace periods.
   */
  #checkInlineConfig (config: StoredPushConfig): Promise<void> | undefined {
    const check = this.#options.checkPushConfig?.(config)
    if (check === undefined) return undefined
    // Not a race with one promise shutdown resolves: each race would leave a reaction on it
    // for as long as the server runs.
    return new Promise<void>((resolve, reject) => {
      const stopWaiting = () => resolve()
      this.#checking.add(stopWaiting)
      check.then(() => {
        this.#checking.delete(stopWaiting)
        resolve()
      }, (error: unknown) => {
        this.#checking.delete(stopWaiting)
        reject(error)
      })
    })
  }

  /** The turn that creates task `taskId`: its events go to `listener` from the first, the task itself. */
  #newTaskTurn (
    params: SendMessageRequest, context: CallContext, listener: BusListener, ended: TurnEnded, taskId: string, inlineConfig?: StoredPushConfig
  ): Turn {
    const { contextId } = params.message
    const task = { id: taskId, contextId: hasText(contextId) ? contextId : newId() }
    const execution = this.#turnExecution(this.#scope(context), task, params.message, ended, inlineConfig)
    return this.#launch(execution, undefined, context, params, this.#options.bus.subscribe(execution.run.topic, listener))
  }

  /** Starts the executor: the turn is on. */
  #launch (execution: Execution, taskAtStart: Task | undefined, context: CallContext, params: SendMessageRequest, unsubscribe: () => void): Turn {
    const { run } = execution
    this.#execute(execution, execution.context = this.#executionContext(execution, taskAtStart, context, params))
    return { taskId: run.taskId, scope: run.scope, run, unsubscribe }
  }

  /**
   * A turn's execution of the user's `message` on `task`, registered on the task's run before
   * anything awaits: the run is not dropped meanwhile, and a cancel finds it.
   */
  #turnExecution (scope: Scope, task: Pick<Task, 'id' | 'contextId'>, message: Message, ended: TurnEnded, pushConfig?: StoredPushConfig): Execution {
    if (this.#refusingTurns) throw shuttingDown()
    const run = this.#runFor(scope, task)
    const execution = this.#newExecution(run, withTask(message, task.id, task.contextId as string), ended)
    if (pushConfig !== undefined) execution.pushConfig = pushConfig
    addExecution(run, execution)
    return execution
  }

  #newExecution (run: TaskRun, userMessage: Message, ended: TurnEnded = noop): Execution {
    return { run, controller: new LazyAbortController(), userMessage, replied: false, timedOut: false, fenced: undefined, ended }
  }

  #openStream (): EventQueue<StreamResponse> {
    const queue = new EventQueue<StreamResponse>(this.#options.maxQueuedEvents)
    this.#streams.add(queue)
    queue.onClose(() => this.#streams.delete(queue))
    return queue
  }

  #executionContext (execution: Execution, task: Task | undefined, context: CallContext, params?: Pick<SendMessageRequest, 'configuration' | 'metadata'>): TurnContext {
    return new TurnContext(execution.controller, execution.userMessage, task, execution.run.taskId, execution.run.contextId, context, params)
  }

  /** The executor's `work`, a synchronous throw turned into a rejection like any other (without an async wrapper's promises). */
  #callExecutor (work: ExecutorCall, context: ExecutionContext, events: TurnEvents): Promise<void> {
    const { executor } = this.#options
    try {
      return Promise.resolve((executor[work] as AgentExecutor['execute']).call(executor, context, events))
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /**
   * Runs the executor, bounded by `executorTimeout`. Once it returned, threw or timed out,
   * its task is left terminal or interrupted, never running without an executor (#executed).
   */
  #execute (execution: Execution, context: ExecutionContext, work: ExecutorCall = 'execute'): void {
    if (execution.controller.aborted) {
      // Stopped (by CancelTask or shutdown) while its turn was set up: no executor is called
      // for a turn already over; the turn ends as it would once one returned.
      void Promise.resolve().then(() => this.#executed(execution, undefined))
      return
    }
    const deadline = this.#deadlines.add(execution)
    const events = this.#eventsFor(execution)
    this.#callExecutor(work, context, events).then(() => {
      TurnEvents.close(events, this.#lateSink)
      if (this.#deadlines.delete(deadline)) this.#executed(execution, undefined)
    }, (error: unknown) => {
      TurnEvents.close(events, this.#lateSink)
      const inTime = this.#deadlines.delete(deadline)
      this.#options.logger.error({ err: error, taskId: execution.run.taskId }, inTime ? 'executor failed' : 'executor failed after its timeout')
      if (inTime) this.#executed(execution, error)
    })
  }

  /** `executorTimeout` passed: the execution is aborted, marked timed out and no longer waited for. */
  #timedOut (execution: Execution): void {
    execution.timedOut = true
    execution.controller.abort()
    this.#executed(execution, undefined)
  }

  /** The executor is over, with what it threw (undefined when it returned or timed out): the turn ends once its task does. */
  #executed (execution: Execution, failure: unknown): void {
    // Shutdown gave up on it and ended its turn (abandonExecutions): nothing is left to do.
    if (execution.fenced === 'abandoned') return
    const { run } = execution
    dropExecution(run, execution)
    if (!run.busy && this.#settled(execution)) {
      // Nothing to change and nothing queued: the run is left as a change would leave it.
      this.#next(run)
      this.#ended(execution)
      return
    }
    let outcome: MaybePromise<void>
    try {
      outcome = this.#apply(run, this.#finish(execution, failure))
    } catch (error) {
      this.#unfinished(execution, failure, error)
      return
    }
    if (isPromise(outcome)) outcome.then(() => this.#ended(execution), (error: unknown) => this.#unfinished(execution, failure, error))
    else this.#ended(execution)
  }

  /**
   * The task could not be left as it should once its executor is over (#finish failed with
   * `error`, mostly the store's): the turn ends with the error. A task that exists is left
   * running without an executor: its final state is tried again until the store writes it (#retryEnd).
   */
  #unfinished (execution: Execution, failure: unknown, error: unknown): void {
    this.#ended(execution, error)
    if (execution.run.state === undefined) return
    const [state, reason] = this.#finalStatus(execution, failure)
    this.#retryEnd(execution.run, state, reason, error, Date.now(), 0)
  }

  #ended (execution: Execution, error?: unknown): void {
    this.#options.cluster?.drop(keyOf(execution.run))
    execution.ended(error)
  }

  /**
   * Is the turn's task left as it should be once its executor is over, or not this execution's
   * to leave? It is not while another execution (a later message's) still runs the task.
   */
  #settled (execution: Execution): boolean {
    const { state, executions } = execution.run
    return execution.replied || execution.fenced !== undefined || executions.length > 0 || (state !== undefined && (isTerminal(state) || isInterrupted(state)))
  }

  /** After the executor returned: the task is left terminal or interrupted, never running without an executor. */
  * #finish (execution: Execution, failure: unknown): Steps<void> {
    const { run } = execution
    if (this.#settled(execution)) return
    // A later message's execution runs the task on another instance: it ends it, as one here would (#settled).
    if (run.state !== undefined && (yield * this.#runsElsewhere(run))) return
    if (run.state === undefined) {
      // Before any task exists, an A2A error the executor throws is the call's answer; so is a
      // service out of reach (its first event's store write failed, say): Unavailable, worth
      // another attempt, rather than a task FAILED for good.
      if (isA2AError(failure)) throw failure
      if (isUnreachable(failure)) throw toA2AError(failure)
      // Stopped by shutdown before it made a task: the call is refused as new ones are, and no task is made.
      if (execution.controller.aborted && !execution.timedOut) throw shuttingDown()
      // Past executorTimeout the task is made FAILED, as it would be had the executor made one.
      if (failure === undefined && !execution.timedOut) throw new InvalidAgentResponseError('the executor returned without a task or a message')
      yield * this.#ensureTask(execution)
    }
    const [state, reason] = this.#finalStatus(execution, failure)
    yield * this.#applyStatus(run, state, reason === undefined ? undefined : this.#agentMessage(run, reason))
  }

  /** The state an execution that is over leaves its task in when it left it running, and why (the status message; none for CANCELED). */
  #finalStatus (execution: Execution, failure: unknown): [TaskState, string | undefined] {
    if (execution.timedOut) return ['TASK_STATE_FAILED', `the agent did not finish within ${this.#executorTimeout} ms`]
    if (execution.controller.aborted) return ['TASK_STATE_CANCELED', undefined]
    return ['TASK_STATE_FAILED', failure === undefined ? STOPPED_WITHOUT_FINAL_STATE : 'the agent failed']
  }

  /**
   * The final state of the run's task failed to be written, with `error`: it is tried again
   * after a backoff (FINAL_STATE_RETRY_DELAY_MS, doubled at each try up to
   * FINAL_STATE_MAX_RETRY_DELAY_MS, half of it random), as a change of the task's run then
   * (#endLeftTask: unless an execution runs the task again, or it is over as stored), for
   * `finalStateRetry` ms from the first failure; given up then, or when the handler closes.
   * A task is so never left running without an executor for longer than the store fails.
   */
  #retryEnd (run: TaskRun, state: TaskState, reason: string | undefined, error: unknown, since: number, attempt: number): void {
    const { scope, taskId, contextId } = run
    const ceiling = Math.min(FINAL_STATE_RETRY_DELAY_MS * 2 ** attempt, FINAL_STATE_MAX_RETRY_DELAY_MS)
    const delay = Math.round(ceiling / 2 + Math.random() * ceiling / 2)
    if (this.#closed || Date.now() + delay - since > this.#finalStateRetry) {
      this.#options.logger.error({ err: error, taskId, state, attempts: attempt + 1 }, 'could not write the final state of a task: given up, the task is left as stored')
      return
    }
    if (attempt === 0) this.#options.logger.warn({ err: error, taskId, state }, 'could not write the final state of a task: trying again')
    const timer = setTimeout(() => {
      this.#retries.delete(timer)
      const current = this.#runFor(scope, { id: taskId, contextId })
      this.#enqueue(current, this.#endLeftTask(current, state, reason))
        .catch((failed: unknown) => this.#retryEnd(current, state, reason, failed, since, attempt + 1))
    }, delay)
    timer.unref()
    this.#retries.set(timer, taskId)
  }

  /** Cluster: does another live instance hold the task's lease, so run an execution of it? */
  * #runsElsewhere (run: TaskRun): Steps<boolean> {
    const { cluster } = this.#options
    if (cluster === undefined) return false
    const owners: string[] = yield cluster.owners(keyOf(run))
    return owners.some(owner => owner !== cluster.instanceId)
  }

  /**
   * A later message's execution failed to start (its change was refused), and no execution of
   * the task is left: the earlier one returned meanwhile leaving the task to it (#settled). The
   * task ends FAILED, as that one's end would have left it, unless it is over or runs elsewhere.
   */
  #leftWithoutExecution (run: TaskRun): void {
    if (run.executions.length > 0 || run.state === undefined || isTerminal(run.state) || isInterrupted(run.state)) return
    this.#enqueue(run, this.#endLeftTask(run, 'TASK_STATE_FAILED', STOPPED_WITHOUT_FINAL_STATE)).catch((error: unknown) => this.#retryEnd(run, 'TASK_STATE_FAILED', STOPPED_WITHOUT_FINAL_STATE, error, Date.now(), 0))
  }

  /** Ends the task that no execution runs in `state`, unless one runs it again, or it is over (terminal or interrupted) as stored. */
  * #endLeftTask (run: TaskRun, state: TaskState, reason: string | undefined): Steps<void> {
    if (run.executions.length > 0 || (yield * this.#runsElsewhere(run))) return
    // Decided on the task as stored: the refused change may have failed before it read the task.
    const task: Task | undefined = yield this.#readTask(run.taskId, run.scope)
    if (task === undefined) return
    this.#takeStoredState(run, task)
    yield * this.#endTask(run, state, reason, true)
  }

  /** CancelTask's change: the task ends CANCELED, unless it is over as stored now. */
  * #cancelChange (run: TaskRun): Steps<void> {
    this.#takeStoredState(run, yield this.#loadIn(run.taskId, run.scope))
    yield * this.#endTask(run, 'TASK_STATE_CANCELED')
  }

  /**
   * The run takes the state of `task`, read in one of its changes, so after every change this
   * process made before it. The run's own may be older: made from a read done before the run
   * existed, it misses what a turn on a run since dropped did (the task waits for input, or
   * ended, and its readers were told). An end the run does not know of while its executor runs
   * came from a process sharing the store: it is left to that executor's next change, which
   * takes it (#takeEnd: the executor is aborted and this server's readers get the end).
   */
  #takeStoredState (run: TaskRun, task: Task): void {
    if (isTerminal(task.status.state) && executorRuns(run)) return
    run.state = task.status.state
  }

  /** Ends the task in `state` (with `reason` as its status message), unless it is over: terminal, or interrupted when `unlessInterrupted`. */
  * #endTask (run: TaskRun, state: TaskState, reason?: string, unlessInterrupted = false): Steps<void> {
    if (run.state === undefined || isTerminal(run.state) || (unlessInterrupted && isInterrupted(run.state))) return
    yield * this.#applyStatus(run, state, reason === undefined ? undefined : this.#agentMessage(run, reason))
  }

  #eventsFor (execution: Execution): TurnEvents {
    return new TurnEvents(this.#sink, execution)
  }

  // An executor's events, each a change of its task. One the executor got wrong is refused to
  // it (InvalidAgentResponse) and ends the task FAILED (#refuse). After one is applied, a
  // reader half its bound behind gets a turn of the event loop before the executor goes on:
  // an executor whose store never waits (the memory store's) would otherwise fill the queue
  // in one run of microtasks, before an SSE response could drain or the WebSocket writer (one
  // event per turn) take more than one, and the stream would end STREAM_LAGGED at ~1,000.

  * #statusEvent (execution: Execution, state: TaskState, message?: AgentMessageInput): Steps<void> {
    const { run } = execution
    if (this.#lostEvent(execution, 'status')) return
    try {
      if (execution.replied) throw new InvalidAgentResponseError('a status update after a direct message reply')
      if (run.state === undefined) yield * this.#ensureTask(execution)
      if (this.#ignoredAfterEnd(run, 'status')) return
      const checked = validateState.check(state)
      if (!checked.ok) throw new InvalidAgentResponseError(`state ${JSON.stringify(state)} is not a task state`)
      yield * this.#applyStatus(run, state, message === undefined ? undefined : this.#agentMessage(run, message), execution)
    } catch (error) {
      yield * this.#refuse(run, 'status', error)
    }
    if (this.#behind(run)) yield nextTurn()
  }

  * #artifactEvent (execution: Execution, artifact: ArtifactInput, options?: ArtifactOptions): Steps<void> {
    const { run } = execution
    if (this.#lostEvent(execution, 'artifact')) return
    try {
      if (execution.replied) throw new InvalidAgentResponseError('an artifact after a direct message reply')
      if (run.state === undefined) yield * this.#ensureTask(execution)
      if (this.#ignoredAfterEnd(run, 'artifact')) return
      yield * this.#applyArtifact(run, artifact, options)
    } catch (error) {
      yield * this.#refuse(run, 'artifact', error)
    }
    if (this.#behind(run)) yield nextTurn()
  }

  * #messageEvent (execution: Execution, input: AgentMessageInput): Steps<void> {
    const { run } = execution
    if (this.#lostEvent(execution, 'message')) return
    try {
      if (execution.replied) throw new InvalidAgentResponseError('a second direct message reply')
      if (run.state === undefined) {
        // Checked first: an invalid reply is no reply, and the call fails with InvalidAgentResponse.
        const reply = this.#agentMessage(run, input, false)
        execution.replied = true
        this.#options.bus.publish(run.topic, { message: reply })
        return
      }
      if (this.#ignoredAfterEnd(run, 'message')) return
      const message = this.#agentMessage(run, input)
      let version: number | void
      try {
        version = yield this.#updateTask(run.taskId, { kind: 'history', message }, run.scope)
      } catch (error) {
        return yield * this.#endedElsewhere(run, error)
      }
      // In the history, and no stream event: after its task a stream carries status and
      // artifact updates only (spec §3.2), and clients read a message there as the stream's
      // end. Push notifications, which have no such pattern, get it.
      this.#options.onTaskEvent?.({ message }, run, typeof version === 'number' ? version : undefined)
    } catch (error) {
      yield * this.#refuse(run, 'message', error)
    }
    if (this.#behind(run)) yield nextTurn()
  }

  /** An event of `kind` failed with `error`, thrown on: when the executor got it wrong, its task ends FAILED first. */
  * #refuse (run: TaskRun, kind: string, error: unknown): Steps<never> {
    if (error instanceof InvalidAgentResponseError && run.state !== undefined && !isTerminal(run.state)) {
      this.#options.logger.warn({ taskId: run.taskId, event: kind, err: error }, 'invalid executor event: task failed')
      yield * this.#applyStatus(run, 'TASK_STATE_FAILED', this.#agentMessage(run, `the agent sent an invalid ${kind} event`))
    }
    throw error
  }

  /** `queue` reads the task's events: the executor of this turn and of every later one keeps to its pace (#statusEvent). */
  #follow (topic: string, queue: EventQueue<StreamResponse>): void {
    let followers = this.#followers.get(topic)
    if (followers === undefined) this.#followers.set(topic, followers = new Set())
    followers.add(queue)
    queue.onClose(() => {
      followers.delete(queue)
      if (followers.size === 0 && this.#followers.get(topic) === followers) this.#followers.delete(topic)
    })
  }

  #behind (run: TaskRun): boolean {
    const followers = this.#followers.get(run.topic)
    if (followers === undefined) return false
    for (const queue of followers) if (queue.buffered * 2 >= this.#options.maxQueuedEvents) return true
    return false
  }

  /** A change that is not applied: counted (`ignoredEvents`) and logged with why. */
  #ignore (taskId: string, fields: Record<string, unknown>, why: string): void {
    this.#ignoredEvents++
    this.#options.logger.warn({ taskId, ...fields, ignoredEvents: this.#ignoredEvents }, why)
  }

  /** Was the execution lost to another instance, or abandoned at shutdown? Then its event is ignored, counted and logged. */
  #lostEvent (execution: Execution, kind: string): boolean {
    if (execution.fenced === undefined) return false
    this.#ignore(execution.run.taskId, { event: kind },
      execution.fenced === 'lost' ? 'executor event after this instance lost the task: ignored' : 'executor event after shutdown abandoned the execution: ignored')
    return true
  }

  /** An event of an `execute()` that has returned (or thrown): the execution is over, so the event is ignored, counted and logged. */
  #lateEvent (execution: Execution, kind: string): Promise<void> {
    this.#ignore(execution.run.taskId, { event: kind }, 'executor event after its execution returned: ignored')
    return RESOLVED
  }

  /** Is the task over? Then the executor's event is ignored, counted and logged. */
  #ignoredAfterEnd (run: TaskRun, kind: string): boolean {
    if (run.state === undefined || !isTerminal(run.state)) return false
    this.#ignore(run.taskId, { event: kind, state: run.state }, 'executor event after the task ended: ignored')
    return true
  }

  /**
   * The store refused a change because the task is terminal (TaskStore.update): a process
   * sharing the store ended it first. The run takes that end (#takeEnd); any other error is
   * thrown on.
   */
  * #endedElsewhere (run: TaskRun, error: unknown): Steps<void> {
    if (!(error instanceof TaskTerminalError)) throw error
    this.#takeEnd(run, error, yield this.#readTask(run.taskId, run.scope))
  }

  /**
   * The run's task ended elsewhere, as `stored` says (read after the refusal; gone if it expired
   * since). Its executions are aborted and their later events ignored (#ignoredAfterEnd), and
   * the readers here get its final status, which ends their turns and streams. Without a
   * version: the push configs and other instances had it from the process that wrote it.
   */
  #takeEnd (run: TaskRun, refusal: TaskTerminalError, stored: Task | undefined): void {
    const status = stored !== undefined && isTerminal(stored.status.state) ? stored.status : { state: refusal.state }
    run.state = status.state
    for (const execution of run.executions) execution.controller.abort()
    this.#ignore(run.taskId, { state: status.state }, 'the task ended in another process sharing the store: change ignored, executions aborted')
    this.#options.bus.publish(run.topic, statusUpdateEvent(run.taskId, run.contextId, status))
  }

  /** Creates the task, on the executor's first task event (callers check that none exists: no generator made for nothing). */
  * #ensureTask (execution: Execution): Steps<void> {
    const { run } = execution
    const task = newTask(execution)
    const version: number | void = yield this.#createTask(task, run.scope)
    // A new task: no earlier event is being looked up (#storeConfig).
    if (execution.pushConfig !== undefined) yield this.#options.pushConfigStore.set(execution.pushConfig, run.scope)
    this.#taskCreated(run, task, version)
  }

  #taskCreated (run: TaskRun, task: Task, version: number | void): void {
    run.state = task.status.state
    this.#publish(run, { task: projectTask(task) }, version)
  }

  /** `by`: the execution whose event this is, when one is (see #statusApplied). */
  * #applyStatus (run: TaskRun, state: TaskState, message?: Message, by?: Execution): Steps<void> {
    const status = message === undefined ? { state, timestamp: now() } : { state, message, timestamp: now() }
    let version: number | void
    try {
      if (message !== undefined) yield this.#updateTask(run.taskId, { kind: 'history', message }, run.scope)
      version = yield this.#updateTask(run.taskId, { kind: 'status', status }, run.scope)
    } catch (error) {
      return yield * this.#endedElsewhere(run, error)
    }
    this.#statusApplied(run, status, version, by)
  }

  #statusApplied (run: TaskRun, status: TaskStatus, version: number | void, by?: Execution): void {
    run.state = status.state
    this.#publish(run, statusUpdateEvent(run.taskId, run.contextId, status), version)
    // An ended task leaves its other executions nothing to do (a later message's turn ended it
    // while an earlier one still runs): their signals are aborted, as CancelTask's are.
    if (isTerminal(status.state) && (by === undefined || run.executions.length > 1)) {
      for (const execution of run.executions) if (execution !== by) execution.controller.abort()
    }
  }

  * #applyArtifact (run: TaskRun, input: ArtifactInput, options: ArtifactOptions = {}): Steps<void> {
    const artifact = newArtifact(input)
    const checked = validateArtifact.check(artifact)
    if (!checked.ok) throw new InvalidAgentResponseError(checked.violations.map(v => `${v.field} ${v.description}`).join('; '))
    let version: number | void
    try {
      version = yield this.#updateTask(run.taskId, artifactChange(artifact, options), run.scope)
    } catch (error) {
      return yield * this.#endedElsewhere(run, error)
    }
    this.#artifactApplied(run, artifact, options, version)
  }

  #artifactApplied (run: TaskRun, artifact: Artifact, options: ArtifactOptions, version: number | void): void {
    this.#publish(run, artifactUpdateEvent(run.taskId, run.contextId, artifact, options.append === true, options.lastChunk === true), version)
  }

  // An executor's status or artifact event applied at once, without a change's generators and
  // their runner (about 7 % of a SendMessage's server CPU behind HTTP, thirtieth round): on a
  // store with immediate operations, with no change running or queued on the task, and nothing
  // to refuse, ignore or store first. Each returns undefined where it cannot, and the event
  // goes to its change (#statusEvent, #artifactEvent), which handles every case.

  #statusNow (execution: Execution, state: TaskState, message: AgentMessageInput | undefined): Promise<void> | undefined {
    const store = this.#immediateFor(execution)
    if (store === undefined || message !== undefined || !validateState.check(state).ok) return undefined
    return this.#applyNow(execution, store, { kind: 'status', status: { state, timestamp: now() } })
  }

  #artifactNow (execution: Execution, input: ArtifactInput, options: ArtifactOptions = {}): Promise<void> | undefined {
    const store = this.#immediateFor(execution)
    if (store === undefined) return undefined
    const artifact = newArtifact(input)
    if (!validateArtifact.check(artifact).ok) return undefined
    return this.#applyNow(execution, store, artifactChange(artifact, options), options)
  }

  /** Stores `change` (the task first, on its first event) and publishes its event; a store's throw is the executor's rejection. */
  #applyNow (execution: Execution, store: ImmediateTaskStore, change: StatusChange | ArtifactChange, options: ArtifactOptions = {}): Promise<void> {
    const { run } = execution
    run.busy = true
    try {
      if (run.state === undefined) this.#createNow(store, execution, change.kind === 'status' ? change.status.timestamp : undefined)
      const version = store.updateNow(run.taskId, change, run.scope)
      if (change.kind === 'status') this.#statusApplied(run, change.status, version, execution)
      else this.#artifactApplied(run, change.artifact, options, version)
    } catch (error) {
      if (!(error instanceof TaskTerminalError)) {
        this.#next(run)
        return Promise.reject(error)
      }
      this.#takeEnd(run, error, store.getNow(run.taskId, run.scope))
    }
    return this.#appliedNow(run)
  }

  /** The store's immediate operations, if `execution`'s event may be applied at once; its task, if any, is not over. */
  #immediateFor (execution: Execution): ImmediateTaskStore | undefined {
    const { run } = execution
    if (run.busy || execution.fenced !== undefined || execution.replied) return undefined
    if (run.state === undefined ? execution.pushConfig !== undefined : isTerminal(run.state)) return undefined
    return this.#immediate
  }

  #createNow (store: ImmediateTaskStore, execution: Execution, timestamp: string | undefined): void {
    const { run } = execution
    const task = newTask(execution, timestamp)
    this.#taskCreated(run, task, store.createNow(task, run.scope))
  }

  /** The run goes on with its queue; after a turn of the event loop when a reader is behind (#statusEvent). */
  #appliedNow (run: TaskRun): Promise<void> {
    if (!this.#behind(run)) {
      this.#next(run)
      return RESOLVED
    }
    const turn = nextTurn()
    this.#nextAfter(run, turn)
    return turn
  }

  /** Publishes a stored change's event with the task's version after it (TaskStore); a direct reply goes on the bus without one. */
  #publish (run: TaskRun, event: StreamResponse, version: number | void): void {
    const counted = typeof version === 'number' ? version : undefined
    this.#options.bus.publish(run.topic, event, counted)
    // The run is the event's TaskRef: no object per event.
    this.#options.onTaskEvent?.(event, run, counted)
  }

  /** The executor's message as the agent's, in the task's context (a direct reply has no `taskId`). */
  #agentMessage (run: TaskRun, input: AgentMessageInput, ofTask = true): Message {
    const fields = typeof input === 'string' ? { parts: [{ text: input }] } : input
    const message = copyWithParts(fields) as Message
    message.messageId = fields.messageId ?? newId()
    message.role = 'ROLE_AGENT'
    message.contextId = run.contextId
    if (ofTask) message.taskId = run.taskId
    else if (Object.hasOwn(message, 'taskId')) delete message.taskId
    const checked = validateAgentMessage.check(message)
    if (!checked.ok) throw new InvalidAgentResponseError(checked.violations.map(v => `${v.field} ${v.description}`).join('; '))
    return message
  }

  // The task store's create, get and update: at once when it has immediate operations.
  #createTask (task: Task, scope: Scope): MaybePromise<number | void> {
    const immediate = this.#immediate
    return immediate === undefined ? this.#options.taskStore.create(task, scope) : immediate.createNow(task, scope)
  }

  #readTask (id: string, scope: Scope): MaybePromise<Task | undefined> {
    const immediate = this.#immediate
    return immediate === undefined ? this.#options.taskStore.get(id, scope) : immediate.getNow(id, scope)
  }

  #updateTask (id: string, change: TaskChange, scope: Scope): MaybePromise<number | void> {
    const immediate = this.#immediate
    return immediate === undefined ? this.#options.taskStore.update(id, change, scope) : immediate.updateNow(id, change, scope)
  }

  /**
   * Runs `change` after every change queued before it on the same task. With none queued it
   * runs at once, and with the memory store ends at once: its outcome is then returned (or
   * thrown) as it is, with no promise chain per change.
   */
  #apply<T> (run: TaskRun, change: Steps<T>): MaybePromise<T> {
    if (run.busy) {
      return new Promise<T>((resolve, reject) => { (run.waiting ??= new Fifo()).push({ steps: change, resolve: resolve as (value: unknown) => void, reject }) })
    }
    run.busy = true
    let outcome: MaybePromise<T>
    try {
      outcome = runSteps(change)
    } catch (error) {
      this.#next(run)
      throw error
    }
    if (isPromise(outcome)) {
      this.#nextAfter(run, outcome)
      return outcome
    }
    this.#next(run)
    return outcome
  }

  /** #apply, as a promise: what executors and the calls await. */
  #enqueue<T> (run: TaskRun, change: Steps<T>): Promise<T> {
    let outcome: MaybePromise<T>
    try {
      outcome = this.#apply(run, change)
    } catch (error) {
      return Promise.reject(error)
    }
    if (isPromise(outcome)) return outcome
    return outcome === undefined ? RESOLVED as Promise<T> : Promise.resolve(outcome)
  }

  /**
   * The running change is over: the queued ones run in order, until one waits for its store.
   * Once none is left the run is free, and goes when no execution runs either.
   */
  #next (run: TaskRun): void {
    for (let queued = run.waiting?.shift(); queued !== undefined; queued = run.waiting?.shift()) {
      let outcome: unknown
      try {
        outcome = runSteps(queued.steps)
      } catch (error) {
        queued.reject(error)
        continue
      }
      if (isPromise(outcome)) {
        outcome.then(queued.resolve, queued.reject)
        this.#nextAfter(run, outcome)
        return
      }
      queued.resolve(outcome)
    }
    run.busy = false
    if (run.executions.length === 0) this.#runs.delete(run.topic)
  }

  /** An execution that never started: its run goes too once nothing is queued or running (#next may have passed it by). */
  #dropExecution (run: TaskRun, execution: Execution): void {
    dropExecution(run, execution)
    this.#dropIfIdle(run)
  }

  /** `run` goes when nothing is queued on it or running. */
  #dropIfIdle (run: TaskRun): void {
    if (!run.busy && run.executions.length === 0 && this.#runs.get(run.topic) === run) this.#runs.delete(run.topic)
  }

  /** Goes on with `run`'s queue once `outcome`, a change that waited for its store, settles (one function a run, made for the first). */
  #nextAfter (run: TaskRun, outcome: Promise<unknown>): void {
    const next = run.next ??= () => this.#next(run)
    outcome.then(next, next)
  }

  #runFor (scope: Scope, task: Pick<Task, 'id' | 'contextId'> & { status?: Task['status'] }): TaskRun {
    const topic = topicOf(scope.tenant, task.id)
    let run = this.#runs.get(topic)
    if (run === undefined) {
      run = {
        topic,
        scope,
        taskId: task.id,
        contextId: task.contextId as string,
        state: task.status?.state,
        busy: false,
        waiting: undefined,
        next: undefined,
        executions: []
      }
      this.#runs.set(topic, run)
    }
    return run
  }

  // ---- cluster ----------------------------------------------------------------------------

  /** Does an executor of the task run in this process? */
  #runsHere (scope: Scope, taskId: string): boolean {
    return (this.#runs.get(topicOf(scope.tenant, taskId))?.executions.length ?? 0) > 0
  }

  /**
   * CancelTask for a task whose executor runs on other instances: they are told (again every
   * heartbeat interval: a command can be lost) and the call waits for the task's terminal event,
   * at most `cancelTimeout`. When no live instance runs it, this one claims it and cancels it here;
   * once a turn this instance was starting on it runs, the cancel is this instance's too.
   */
  async #cancelElsewhere (cluster: ClusterMember, task: Task, scope: Scope, metadata: Record<string, unknown> | undefined): Promise<Task | 'claimed' | 'here'> {
    const { bus } = this.#options
    const key = { tenant: scope.tenant, taskId: task.id }
    const topic = topicOf(scope.tenant, task.id)
    const wakeup = new Wakeup()
    const { cancelTimeout, heartbeatInterval } = cluster.options
    // From the call on: a bus slow to follow the task takes from it. The loop reads the store
    // anyway; the bus only wakes it up early.
    const deadline = Date.now() + cancelTimeout
    const unsubscribe = bus.subscribe(topic, (event) => { if (endsSubscription(event)) wakeup.wake() })
    try {
      await this.#busReady(topic, Math.min(cancelTimeout, this.#busReadyTimeout))
      for (;;) {
        const current = await this.#loadIn(task.id, scope)
        // Ended otherwise meanwhile (completed, failed): refused, as a cancel here would be.
        if (isTerminal(current.status.state)) {
          if (current.status.state !== 'TASK_STATE_CANCELED') throw taskNotCancelable(current)
          return projectTask(current)
        }
        // This instance held the lease, so could neither claim the task nor send itself the command.
        if (this.#runsHere(scope, task.id)) return 'here'
        const owners = (await cluster.owners(key)).filter(owner => owner !== cluster.instanceId)
        if (owners.length === 0 && await cluster.claim(key)) return 'claimed'
        for (const owner of owners) cluster.sendCancel(owner, key, metadata)
        const left = deadline - Date.now()
        if (left <= 0) {
          throw new UnavailableError(`the instance running task ${task.id} did not confirm the cancel within ${cancelTimeout} ms`)
            .with({ metadata: { taskId: task.id } })
        }
        await wakeup.pause(Math.min(left, heartbeatInterval))
      }
    } finally {
      unsubscribe()
    }
  }

  /**
   * Holds the task's lease, then records the messageId as this turn's. When an earlier sending
   * of the messageId started a turn, gives the lease back and returns what became of that turn.
   */
  async #claimTurn (cluster: ClusterMember, key: TaskKey, messageId: string): Promise<Resend | undefined> {
    // The lease first: a recorded messageId always has its task, or a live lease, behind it.
    await cluster.hold(key)
    try {
      for (;;) {
        const original = await cluster.claimMessage(key, messageId)
        if (original === undefined) return undefined
        const earlier = await this.#earlierTurn(cluster, { tenant: key.tenant, taskId: original })
        if (earlier !== undefined) {
          cluster.drop(key)
          return earlier
        }
        // The earlier turn left nothing to attach to (it answered with a message, or its instance died first): this one starts over.
        if (await cluster.reclaimMessage(key, messageId, original)) return undefined
      }
    } catch (error) {
      cluster.drop(key)
      throw error
    }
  }

  /**
   * The turn an earlier sending started on the task `key`: its task once it exists, or its direct
   * reply if it sends one meanwhile; undefined once it left neither and no instance runs it.
   */
  async #earlierTurn (cluster: ClusterMember, key: TaskKey): Promise<Resend | undefined> {
    const { bus, taskStore } = this.#options
    const topic = topicOf(key.tenant, key.taskId)
    const wakeup = new Wakeup()
    let reply: Message | undefined
    const unsubscribe = bus.subscribe(topic, (event) => {
      if (event.message !== undefined && event.message.taskId === undefined) reply = event.message
      wakeup.wake()
    })
    try {
      // Its direct reply would be missed: refused, worth another try, rather than run again.
      await this.#busFollows(topic, key.taskId)
      for (;;) {
        if (reply !== undefined) return { resentTo: key.taskId, reply }
        if (await taskStore.get(key.taskId, { tenant: key.tenant }) !== undefined) return { resentTo: key.taskId }
        if ((await cluster.owners(key)).length === 0) return undefined
        // Its first event (the task, or the reply) is a moment away; a reply published before this listened is not seen.
        await wakeup.pause(Math.min(RESEND_POLL_MS, cluster.options.heartbeatInterval))
      }
    } finally {
      unsubscribe()
    }
  }

  /** SendMessage of a resent messageId: the answer of the turn its first sending started (at once with returnImmediately). */
  async #answerResend (resend: Resend, scope: Scope, returnImmediately: boolean, historyLength?: number): Promise<SendMessageResponse> {
    if (resend.reply !== undefined) return { message: resend.reply }
    for await (const event of await this.#followResend(resend, scope)) {
      if (event.message !== undefined && event.message.taskId === undefined) return { message: event.message }
      if (event.task !== undefined && returnImmediately) return { task: projectTask(event.task, historyLength) }
      if (answersTurn(event)) break
    }
    return { task: projectTask(await this.#loadIn(resend.resentTo, scope), historyLength) }
  }

  /**
   * A resent messageId's stream: the turn its first sending started, wherever it runs, from the
   * task as it is now (or its direct reply alone). It ends as that turn's stream does: after a
   * terminal state, or an interrupted one once no instance runs the task.
   */
  async #followResend (resend: Resend, scope: Scope, queue = this.#openStream()): Promise<EventQueue<StreamResponse>> {
    if (resend.reply !== undefined) {
      queue.push({ message: resend.reply })
      queue.end()
      return queue
    }
    const cluster = this.#options.cluster as ClusterMember
    const taskId = resend.resentTo
    const topic = topicOf(scope.tenant, taskId)
    let task: Task, subscription: SnapshotSubscription, running: boolean
    try {
      // A task caught up with after the bus resubscribed ends the stream when terminal, as the snapshot does.
      subscription = this.#subscribeTo(queue, topic, taskId, scope, (event) => {
        queue.push(event)
        if (endsTurn(event) || endsSubscription(event)) queue.end()
      })
      await this.#busFollows(topic, taskId, queue)
      task = await subscription.read()
      running = (await cluster.owners({ tenant: scope.tenant, taskId })).length > 0
    } catch (error) {
      queue.return()
      throw error
    }
    queue.push({ task })
    const { state } = task.status
    if (isTerminal(state) || (isInterrupted(state) && !running)) queue.end()
    subscription.release()
    this.#watchResend(cluster, queue, taskId, scope)
    return queue
  }

  /**
   * A resend's stream waits on another turn, which may end unseen (its last event published
   * before this instance listened): every heartbeat interval, once no instance holds the task
   * and it is terminal or interrupted, the stream ends with the task as stored. (A task whose
   * instance died is failed by the sweep, whose event ends the stream.)
   */
  #watchResend (cluster: ClusterMember, queue: EventQueue<StreamResponse>, taskId: string, scope: Scope): void {
    const look = async () => {
      if ((await cluster.owners({ tenant: scope.tenant, taskId })).length > 0) return
      const task = await this.#loadIn(taskId, scope)
      if (!isTerminal(task.status.state) && !isInterrupted(task.status.state)) return
      queue.push({ task: projectTask(task) })
      queue.end()
    }
    const timer = setInterval(() => {
      look().catch((error: unknown) => queue.fail(error))
    }, cluster.options.heartbeatInterval)
    queue.onClose(() => clearInterval(timer))
  }

  /** `executor.resume` takes on a task whose instance died; it holds the task's lease like a turn. */
  async #resume (run: TaskRun, task: Task): Promise<void> {
    const cluster = this.#options.cluster as ClusterMember
    const execution = this.#newExecution(run, lastUserMessage(task), (error) => {
      if (error !== undefined) this.#options.logger.error({ err: error, taskId: run.taskId }, 'executor resume failed')
    })
    addExecution(run, execution)
    try {
      await cluster.hold(keyOf(run))
    } catch (error) {
      this.#dropExecution(run, execution)
      throw error
    }
    this.#execute(execution, execution.context = this.#executionContext(execution, projectTask(task), clusterContext(run.scope.tenant, 'SendMessage')), 'resume')
  }

  // ---- checks ---------------------------------------------------------------------------

  #scope (context: CallContext): Scope {
    return context.tenant === '' ? DEFAULT_SCOPE : { tenant: context.tenant }
  }

  #loadTask (id: string, context: CallContext): MaybePromise<Task> {
    return this.#loadIn(id, this.#scope(context))
  }

  /** The task, or TaskNotFound; at once from a store with immediate operations (callers await it). */
  #loadIn (id: string, scope: Scope): MaybePromise<Task> {
    const read = this.#readTask(id, scope)
    if (isPromise(read)) return read.then(task => task ?? Promise.reject(taskNotFound(id)))
    if (read === undefined) throw taskNotFound(id)
    return read
  }

  /** The task with its version; no version from a store that counts none. */
  async #loadSnapshot (id: string, scope: Scope): Promise<{ task: Task, version?: number }> {
    const { taskStore } = this.#options
    if (taskStore.getVersioned === undefined) return { task: await this.#loadIn(id, scope) }
    const snapshot = await taskStore.getVersioned(id, scope)
    if (snapshot === undefined) throw taskNotFound(id)
    return snapshot
  }

  #refuseTerminal (task: Task, action: string): void {
    if (isTerminal(task.status.state)) throw terminalRefusal(action, task.id, task.status.state)
  }

  #checkMediaTypes (message: Message): void {
    const modes = this.#options.inputModes
    if (modes === undefined) return
    const { parts } = message
    for (let index = 0; index < parts.length; index++) {
      const type = parts[index]?.mediaType?.toLowerCase()
      if (type === undefined || type === '' || modes.some(mode => mediaTypeMatches(mode, type))) continue
      throw new ContentTypeNotSupportedError(type).with({ metadata: { mediaType: type, part: `message.parts[${index}]` } })
    }
  }

  /** Throws what a call to a method needing `capability` gets when the card does not declare it. */
  requireCapability (capability: 'streaming' | 'pushNotifications' | 'extendedAgentCard'): void {
    if (this.#options.capabilities[capability] === true) return
    if (capability === 'pushNotifications') throw new PushNotificationNotSupportedError()
    throw new UnsupportedOperationError(capability === 'streaming' ? 'streaming is not supported' : 'the extended agent card is not supported')
  }

  /**
   * Stores a push config once the task's events published so far have their configs looked up:
   * a lookup still waiting on a slow store would otherwise find it and send it events from
   * before its creation. A step of the task's change queue, so that its count of the task's
   * configs holds until it stores.
   *
   * Refused when the task has its most configs already: one caller's configs on one task would
   * otherwise fill the push sender's queue, shared by all, with each event. Replacing a config
   * (same id) adds none. InvalidParams: the spec has no error for a quota, and retrying cannot
   * help until a config is deleted.
   */
  async #storeConfig (config: StoredPushConfig, scope: Scope): Promise<void> {
    await this.#options.pushSettled?.({ tenant: scope.tenant, taskId: config.taskId })
    const { pushConfigStore: store, maxPushConfigsPerTask: max } = this.#options
    if (max !== undefined && (await store.list(config.taskId, { pageSize: max }, scope)).configs.length >= max &&
      await store.get(config.taskId, config.id, scope) === undefined) {
      throw invalidParams([{ field: 'taskId', description: `already has ${max} push notification configs, the most a task may have: delete one, or replace one by its id` }])
    }
    await store.set(config, scope)
  }

  #pushConfig (input: TaskPushNotificationConfig, taskId: string): StoredPushConfig {
    let url: URL | undefined
    try { url = new URL(input.url) } catch {}
    if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      throw invalidParams([{ field: 'url', description: 'must be an absolute http or https URL' }])
    }
    // Credentials in the URL would be sent as Basic auth, and echoed by Get and List, outside `authentication`.
    if (url.username !== '' || url.password !== '') {
      throw invalidParams([{ field: 'url', description: 'must hold no user or password: give credentials in authentication' }])
    }
    const config: StoredPushConfig = {
      id: hasText(input.id) ? input.id : newId(),
      taskId,
      url: input.url
    }
    if (input.token !== undefined) config.token = input.token
    if (input.authentication !== undefined) config.authentication = input.authentication
    return config
  }
}

