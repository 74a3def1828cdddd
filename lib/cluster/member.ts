// One instance of a cluster (README, *Several instances*). It keeps its lease alive (heartbeat),
// holds a task's lease while an execution of the task runs here, takes commands from the
// bus (a CancelTask forwarded by another instance), and sweeps for instances that died:
// their tasks are claimed, one instance each, and ended or resumed; their push deliveries
// are taken over. A sweep runs as each live lease expires, so a task ends at most
// `leaseTtl` after its instance died, plus the time of one sweep.
import type { BusCommand, EventBus } from '../bus/types.js'
import { topicOf } from '../bus/topic.js'
import type { Logger, RequestHandler, TaskRef } from '../handler/request-handler.js'
import type { PushOutbox, PushSender } from '../push/sender.js'
import type { StreamResponse } from '../schema/wire.js'
import { settlesWithin } from '../settles.js'
import type { ClusterStore, NormalizedClusterOptions, OutboxDelivery, TaskKey } from './types.js'

/** Orphans claimed per statement, and batches per sweep (the rest waits for the next sweep). */
const SWEEP_BATCH = 100
const SWEEP_BATCHES = 10
/** A sweep timed to an expiry runs this much after it, so the lease has surely lapsed. */
const EXPIRY_MARGIN_MS = 20

type CommandBus = EventBus & Required<Pick<EventBus, 'command' | 'onCommand'>>

/** A task's lease on this instance: how many executions here hold it, and its last statement (they run in call order). */
interface Hold {
  count: number
  last: Promise<unknown>
}

export class ClusterMember {
  readonly instanceId: string
  readonly options: NormalizedClusterOptions
  readonly #store: ClusterStore
  readonly #bus: CommandBus
  readonly #logger: Logger
  readonly #holds = new Map<string, Hold>()
  /** Forwarded cancels being carried out: a resent command does not run the `cancel` hook twice. */
  readonly #cancelling = new Set<string>()
  /** Leases whose release failed: given back at the next heartbeat, or they would never lapse. */
  readonly #unreleased = new Map<string, TaskKey>()
  #handler: RequestHandler | undefined
  #push: PushSender | undefined
  #heartbeat: NodeJS.Timeout | undefined
  #sweepTimer: NodeJS.Timeout | undefined
  #sweeping: Promise<void> = Promise.resolve()
  /** The heartbeat in progress, until it ends or the next one replaces it (#tick). */
  #beating: object | undefined
  #stopped = false
  #stopCommands: () => void = () => {}

  constructor (options: NormalizedClusterOptions, bus: EventBus, logger: Logger) {
    this.options = options
    this.instanceId = options.instanceId
    this.#store = options.store
    this.#bus = bus as CommandBus
    this.#logger = logger
  }

  /** The push outbox of this instance: deliveries recorded under its id. */
  readonly outbox: PushOutbox = {
    record: (ref: TaskRef, event: StreamResponse, configIds: string[], version?: number) =>
      this.#store.recordDeliveries(this.instanceId, { tenant: ref.scope.tenant, taskId: ref.taskId, contextId: ref.contextId }, event, configIds, version),
    behind: (ref: TaskRef, configIds: string[], version: number) =>
      this.#store.configsBehind({ tenant: ref.scope.tenant, taskId: ref.taskId }, configIds, version),
    owns: (id: string) => this.#store.ownsDelivery(this.instanceId, id),
    finish: (id: string) => this.#store.finishDelivery(id)
  }

  /** Joins the cluster: registered, listening for commands, heartbeat and sweeps running. */
  async start (handler: RequestHandler, push: PushSender | undefined): Promise<void> {
    this.#handler = handler
    this.#push = push
    await this.#store.register(this.instanceId, this.options.leaseTtl)
    this.#stopCommands = await this.#bus.onCommand(this.instanceId, (command) => this.#receive(command))
    this.#heartbeat = setInterval(() => { this.#tick() }, this.options.heartbeatInterval)
    this.#heartbeat.unref()
    this.#scheduleSweep(0)
  }

  /**
   * Leaves the cluster (after the shutdown drained the work): what is left here becomes the
   * others'. A sweep in progress, then the deregistration, are each waited for at most
   * `heartbeatInterval` (a store that stopped answering holds no shutdown for ever).
   */
  async stop (): Promise<void> {
    this.#stopped = true
    clearInterval(this.#heartbeat)
    clearTimeout(this.#sweepTimer)
    this.#stopCommands()
    const bound = this.options.heartbeatInterval
    if (!(await settlesWithin(this.#sweeping, bound))) this.#logger.warn({ instanceId: this.instanceId }, 'cluster: a sweep did not end within heartbeatInterval; leaving without it')
    const deregistered = this.#store.deregister(this.instanceId)
    try {
      if (!(await settlesWithin(deregistered, bound))) throw new Error(`the cluster store did not answer within ${bound} ms`)
      await deregistered
    } catch (error) {
      this.#logger.warn({ err: error }, 'cluster: could not deregister; the instance expires instead')
    }
  }

  // ---- leases ---------------------------------------------------------------------------

  /** An execution of the task runs here: the lease is taken before the first one starts. */
  async hold (key: TaskKey): Promise<void> {
    const hold = this.#holdOf(key)
    if (hold.count++ === 0) this.#then(hold, () => this.#store.acquire(this.instanceId, key))
    try {
      await hold.last
    } catch (error) {
      this.drop(key)
      throw error
    }
  }

  /**
   * That execution ended: the lease is given back after the last one, once the task's events
   * so far have their push deliveries recorded (only a task whose lease names a dead instance
   * is claimed, and so caught up on events stored but never recorded).
   */
  drop (key: TaskKey): void {
    const recording = this.#push?.recorded(key)
    if (recording === undefined) this.#release(key)
    else void recording.then(() => this.#release(key))
  }

  #release (key: TaskKey): void {
    const name = topicOf(key.tenant, key.taskId)
    const hold = this.#holds.get(name)
    if (hold === undefined || hold.count === 0 || --hold.count > 0) return
    this.#giveBack(name, key, hold)
  }

  #giveBack (name: string, key: TaskKey, hold: Hold): void {
    this.#unreleased.delete(name)
    const released = this.#then(hold, () => this.#store.release(this.instanceId, key))
    released.then(() => { if (hold.count === 0 && hold.last === released) this.#holds.delete(name) }, (error: unknown) => {
      this.#logger.warn({ err: error, taskId: key.taskId }, 'cluster: could not release a lease; trying again at the next heartbeat')
      // Unless an execution here took the lease again meanwhile: its own end gives it back.
      if (hold.count === 0) this.#unreleased.set(name, key)
    })
  }

  /** Gives back the leases whose release failed, unless an execution here took them again meanwhile. */
  #retryReleases (): void {
    for (const [name, key] of this.#unreleased) {
      const hold = this.#holdOf(key)
      if (hold.count === 0) this.#giveBack(name, key, hold)
      else this.#unreleased.delete(name)
    }
  }

  /**
   * Takes a task no live instance runs (its instance died): true when this instance now holds
   * its lease, given back with `drop`. False when it runs here, or elsewhere.
   */
  async claim (key: TaskKey): Promise<boolean> {
    const hold = this.#holdOf(key)
    if (hold.count > 0) return false
    hold.count++
    let claimed = false
    try {
      claimed = await this.#then(hold, () => this.#store.claim(this.instanceId, key))
    } finally {
      // A turn that started meanwhile believed the lease held: it takes it now.
      if (!claimed && --hold.count > 0) this.#then(hold, () => this.#store.acquire(this.instanceId, key))
      if (hold.count === 0) this.#holds.delete(topicOf(key.tenant, key.taskId))
    }
    return claimed
  }

  /** The live instances running the task, this one included. */
  owners (key: TaskKey): Promise<string[]> {
    return this.#store.owners(key)
  }

  sendCancel (owner: string, key: TaskKey, metadata?: Record<string, unknown>): void {
    this.#bus.command(owner, { type: 'cancel', tenant: key.tenant, taskId: key.taskId, metadata })
  }

  // ---- messageIds -------------------------------------------------------------------------

  claimMessage (key: TaskKey, messageId: string): Promise<string | undefined> {
    return this.#store.claimMessage(key.tenant, messageId, key.taskId)
  }

  reclaimMessage (key: TaskKey, messageId: string, from: string): Promise<boolean> {
    return this.#store.reclaimMessage(key.tenant, messageId, from, key.taskId)
  }

  /** The turn was refused before it began: a resend is to be refused alike, not attached to it. */
  async forgetMessage (key: TaskKey, messageId: string): Promise<void> {
    try {
      await this.#store.forgetMessage(key.tenant, messageId, key.taskId)
    } catch (error) {
      this.#logger.warn({ err: error, taskId: key.taskId }, 'cluster: could not forget a refused messageId')
    }
  }

  // ---- push ------------------------------------------------------------------------------

  /** A push config was created with the task at `version`: it is owed the events after it, not a catch-up for those before. */
  markConfig (key: TaskKey, configId: string, version: number): Promise<void> {
    return this.#store.markConfig(key, configId, version)
  }

  // ---- internals --------------------------------------------------------------------------

  #holdOf (key: TaskKey): Hold {
    const name = topicOf(key.tenant, key.taskId)
    let hold = this.#holds.get(name)
    if (hold === undefined) this.#holds.set(name, hold = { count: 0, last: Promise.resolve() })
    return hold
  }

  /** Runs `statement` after the task's previous lease statement, whatever became of that one. */
  #then<T> (hold: Hold, statement: () => Promise<T>): Promise<T> {
    const next = hold.last.catch(() => {}).then(statement)
    hold.last = next
    return next
  }

  #receive (command: BusCommand): void {
    if (command.type !== 'cancel' || this.#handler === undefined) return
    const key = { tenant: command.tenant, taskId: command.taskId }
    const name = topicOf(key.tenant, key.taskId)
    if (this.#cancelling.has(name)) return
    this.#cancelling.add(name)
    this.#handler.cancelForwarded(key, command.metadata)
      .catch((error: unknown) => this.#logger.error({ err: error, taskId: key.taskId }, 'cluster: a forwarded cancel failed'))
      .finally(() => this.#cancelling.delete(name))
  }

  /**
   * A heartbeat still running at the next one, a whole `heartbeatInterval` later (its renewal
   * unanswered: a connection gone silent), has failed: the next one starts all the same, and
   * only its outcome counts, so a stuck renewal never stops the heartbeat while the lease lapses.
   */
  #tick (): void {
    if (this.#beating !== undefined) {
      this.#logger.warn({ instanceId: this.instanceId }, 'cluster: heartbeat unanswered within heartbeatInterval; renewing again')
    }
    const beat = {}
    this.#beating = beat
    void this.#beat(beat)
  }

  async #beat (beat: object): Promise<void> {
    try {
      const renewed = await this.#store.renew(this.instanceId, this.options.leaseTtl)
      if (this.#beating !== beat) return
      if (!renewed) await this.#lost()
      else this.#retryReleases()
    } catch (error) {
      if (this.#beating === beat) this.#logger.warn({ err: error }, 'cluster: heartbeat failed')
    } finally {
      if (this.#beating === beat) this.#beating = undefined
    }
  }

  /**
   * The lease lapsed before it was renewed (a stall, a lost database): the others may already
   * have ended this instance's tasks. It gives them up, as if it had died, and joins again.
   */
  async #lost (): Promise<void> {
    const lost = this.#handler?.loseExecutions() ?? 0
    this.#logger.warn({ instanceId: this.instanceId, executions: lost }, 'cluster: this instance was taken for dead; its executions were given up')
    this.#holds.clear()
    this.#unreleased.clear()
    await this.#store.releaseAll(this.instanceId)
    await this.#store.register(this.instanceId, this.options.leaseTtl)
  }

  #scheduleSweep (delay: number): void {
    if (this.#stopped) return
    this.#sweepTimer = setTimeout(() => { this.#sweeping = this.#runSweep() }, delay)
    this.#sweepTimer.unref()
  }

  async #runSweep (): Promise<void> {
    let nextExpiry: number | undefined
    try {
      nextExpiry = await this.#sweep()
    } catch (error) {
      this.#logger.warn({ err: error }, 'cluster: sweep failed')
    }
    this.#scheduleSweep(Math.min(this.options.sweepInterval, nextExpiry === undefined ? Infinity : nextExpiry + EXPIRY_MARGIN_MS))
  }

  /** Takes over what dead instances left; returns the ms until the next live lease lapses. */
  async #sweep (): Promise<number | undefined> {
    this.#resumeDeliveries(await this.#store.takeDeliveries(this.instanceId))
    for (let batch = 0; batch < SWEEP_BATCHES && !this.#stopped; batch++) {
      const orphans = await this.#store.orphans(SWEEP_BATCH)
      for (const key of orphans) await this.#endOrphan(key)
      if (orphans.length < SWEEP_BATCH) break
    }
    await this.#store.tidy(this.options.messageIdTtl)
    return await this.#store.nextExpiry(this.instanceId)
  }

  #resumeDeliveries (taken: OutboxDelivery[]): void {
    if (taken.length > 0) this.#push?.resume(taken)
  }

  async #endOrphan (key: TaskKey): Promise<void> {
    if (this.#handler === undefined || !(await this.claim(key))) return
    try {
      // What its instance had not delivered goes out first, then the stored task to the configs
      // whose deliveries stop below its version, before the task's last event.
      this.#resumeDeliveries(await this.#store.takeDeliveries(this.instanceId, key))
      await this.#handler.endOrphan(key, this.options.onOrphan, this.#push?.catchUp)
    } catch (error) {
      this.#logger.error({ err: error, taskId: key.taskId }, 'cluster: could not end a task whose instance died')
    } finally {
      this.drop(key)
    }
  }
}
