// Push-notification delivery (spec §11). Every event of a task is POSTed, as a bare
// StreamResponse, to each push config of the task. Delivery runs beside the task: the
// executor and the streams never wait for a webhook. Each config has its own FIFO
// queue, so a config sees its task's events in order, and a slow or failing webhook
// holds up only itself; when the queues are full, the longest gives up its oldest waiting
// event, so one dead webhook cannot take the others' turns. Queues live in memory: events not yet delivered when the
// process stops are lost, unless an outbox (the `cluster` option) records each delivery
// until its outcome, for another instance to take over.
import { setMaxListeners } from 'node:events'
import http from 'node:http'
import https from 'node:https'
import type { LookupFunction } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { invalidParams, retryAfterMs } from '../errors/index.js'
import type { Logger, TaskRef } from '../handler/request-handler.js'
import type { OutboxDelivery, TaskKey } from '../cluster/types.js'
import type { StreamResponse, TaskPushNotificationConfig } from '../schema/wire.js'
import { serializeStreamResponse } from '../schema/serialize.js'
import { topicOf } from '../bus/topic.js'
import type { PushConfigStore } from '../store/types.js'
import { hostOf, WebhookGuard, WebhookRefusedError, type Resolver } from './ssrf.js'
import { Fifo } from '../client/fifo.js'

export interface PushOptions {
  /**
   * Hosts a webhook may reach although the SSRF guard would refuse them: host names,
   * IP addresses or CIDR ranges, e.g. `['127.0.0.1']` for a test receiver. Default `[]`.
   */
  allow?: string[]
  /** Time one delivery attempt may take, connection to the end of the response's body, in ms. Default 10,000. */
  timeout?: number
  /** Attempts per event and config, the first included. Default 5. */
  maxAttempts?: number
  /** Backoff before the first retry, in ms; doubled for each further retry, with jitter. Default 500. */
  retryDelay?: number
  /** Longest backoff, in ms. Default 30,000. */
  maxRetryDelay?: number
  /**
   * Deliveries waiting or in flight, all configs together. Past it the longest queue drops its
   * oldest waiting delivery to make room (reported); only when no queue has one waiting is the new one dropped. Default 10,000.
   */
  maxQueued?: number
  /** Push configs one task may have; creating one more is refused (InvalidParams), replacing one by its id is not. Default 10. */
  maxConfigsPerTask?: number
  /**
   * Called once per event and config with the outcome: the metrics hook. Not for a config deleted
   * before the event's first attempt, nor, with an outbox, for a delivery this instance leaves to
   * another (it closed, or was taken over): that one reports it.
   */
  onDelivery?: (report: PushDeliveryReport) => void
  /** Host name resolver, for the SSRF checks and the connection. Default: the system resolver. */
  resolve?: Resolver
}

export type PushOutcome = 'delivered' | 'failed' | 'refused' | 'dropped'

/**
 * Durable deliveries (the `cluster` option): each is recorded before its first attempt and
 * forgotten after its outcome, so the instance that takes over a dead one delivers what it left.
 */
export interface PushOutbox {
  /**
   * Records one delivery per config of the event's task; returns their ids in the order of
   * `configIds`. `version`, the task's after the event, is recorded with them as the configs' mark.
   */
  record (ref: TaskRef, event: StreamResponse, configIds: string[], version?: number): Promise<string[]>
  /** The configs among `configIds` whose deliveries are recorded only up to a version below `version`. */
  behind (ref: TaskRef, configIds: string[], version: number): Promise<string[]>
  /** Is the delivery still this instance's? False once another took it over. */
  owns (id: string): Promise<boolean>
  finish (id: string): Promise<void>
}

export interface PushDeliveryReport {
  /**
   * `delivered`: a 2xx answer. `failed`: attempts used up, an answer that is not retried
   * (a 3xx, or a 4xx other than 408 and 429), or the config deleted after an attempt
   * (`config deleted`). `refused`: the SSRF guard refused the address. `dropped`: the queue was
   * full, or the server closed first (without an outbox: with one, the delivery is left to another instance).
   */
  outcome: PushOutcome
  taskId: string
  configId: string
  tenant: string
  /** The event's member: `task`, `message`, `statusUpdate` or `artifactUpdate`. */
  event: string
  attempts: number
  /** The HTTP status of the last attempt, when one answered. */
  status?: number
  /** Why the delivery did not succeed: mostly the last attempt's failure. Never holds the URL, a token or credentials. */
  reason?: string
}

export interface NormalizedPushOptions {
  allow: string[]
  timeout: number
  maxAttempts: number
  retryDelay: number
  maxRetryDelay: number
  maxQueued: number
  maxConfigsPerTask: number
  onDelivery?: (report: PushDeliveryReport) => void
  resolve?: Resolver
}

export const PUSH_DEFAULTS = {
  allow: [] as string[],
  timeout: 10_000,
  maxAttempts: 5,
  retryDelay: 500,
  maxRetryDelay: 30_000,
  maxQueued: 10_000,
  maxConfigsPerTask: 10
}

/** How long a config's creation waits for DNS before accepting the name (delivery checks again). */
const CREATION_LOOKUP_TIMEOUT = 5_000
const PAGE_SIZE = 100
/** RFC 9110 token: what an auth scheme may be. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/**
 * The lookups and deliveries begun between two `idle()` calls. An `idle()` call that finds work
 * pending closes the current epoch and waits until it and the epochs before it have none: the
 * work begun after the call does not hold it back.
 */
interface Epoch {
  /** Its lookups and deliveries not finished; a delivery counts in the epoch of the lookup that made it. */
  pending: number
  /** Once closed: settles when this epoch and every earlier one have nothing pending. */
  idle?: Promise<void>
  resolve?: () => void
}

/** One event's lookup of its task's configs. */
interface Lookup {
  event: StreamResponse
  ref: TaskRef
  /** The task's version after the event. */
  version: number | undefined
  /** A catch-up: only the configs whose recorded deliveries are behind `version`. */
  onlyBehind: boolean
  topic: string
  epoch: Epoch
  /** This lookup's promise: the task's chain ends on it while no later lookup follows. */
  tail?: Promise<void>
}

interface Delivery {
  event: StreamResponse
  body: string
  ref: TaskRef
  configId: string
  /** Its record in the outbox, when there is one. */
  outboxId?: string
  /** The record stays for another instance to deliver (this one closed, or was taken over). */
  kept?: boolean
  /** Its config was deleted: no attempt more, even should a config of the same id be created. */
  deleted?: boolean
  epoch: Epoch
}

/**
 * A config's deliveries: the one being attempted, and those waiting their turn, oldest first. A
 * Fifo: a slow webhook's may number up to maxQueued, and while the queues are full each new
 * delivery takes the oldest waiting out of the longest.
 */
interface DeliveryQueue {
  current: Delivery
  readonly waiting: Fifo<Delivery>
}

/**
 * The key of a config's delivery queue: the config id's length, a NUL, the config id, then the
 * task's topic. The length says where the config id ends and `topicOf` is injective, so no two
 * configs share a queue, whatever NULs tenants and ids hold: a tenant cannot put its deliveries
 * in another's queue, behind its own slow webhook.
 */
function queueKeyOf ({ configId, ref }: { configId: string, ref: Pick<TaskRef, 'taskId' | 'scope'> }): string {
  return `${configId.length}\u0000${configId}${topicOf(ref.scope.tenant, ref.taskId)}`
}

/** How far an event's lookup got: the next page to read, and the event once serialised. */
interface FanOutCursor {
  pageToken?: string
  body?: string
}

interface Attempt {
  ok: boolean
  retry: boolean
  status?: number
  reason?: string
  refused?: boolean
  /** A 429's or 503's Retry-After, in ms: the webhook's own wait before the next attempt. */
  retryAfter?: number
}

export class PushSender {
  readonly #options: NormalizedPushOptions
  readonly #store: PushConfigStore
  readonly #outbox: PushOutbox | undefined
  readonly #logger: Logger
  readonly #guard: WebhookGuard
  readonly #agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) }
  /** Per task: the config lookups of its events, chained so they fan out in event order. */
  readonly #lookups = new Map<string, Promise<void>>()
  /** Per config: its FIFO of deliveries; present while it has any. */
  readonly #queues = new Map<string, DeliveryQueue>()
  readonly #closing = new AbortController()
  /** Where lookups and deliveries begun now count. */
  #epoch: Epoch = { pending: 0 }
  /** Epochs closed by `idle()` with work pending, oldest first; an epoch goes once it and every earlier one have none. */
  readonly #closedEpochs: Array<Required<Epoch>> = []
  /** Deliveries waiting or in flight: bounded by `maxQueued`. */
  #queued = 0
  readonly stats: Record<PushOutcome, number> = { delivered: 0, failed: 0, refused: 0, dropped: 0 }

  constructor (store: PushConfigStore, options: NormalizedPushOptions, logger: Logger, outbox?: PushOutbox) {
    this.#store = store
    this.#outbox = outbox
    this.#options = options
    this.#logger = logger
    this.#guard = new WebhookGuard(options.allow, options.resolve)
    // Every attempt in flight and every backoff listens on it, and are removed after: many at
    // once are not a leak, and Node's warning past ten would be a false alarm in the logs.
    setMaxListeners(0, this.#closing.signal)
  }

  /**
   * Refuses, as InvalidParams, a config whose webhook the SSRF guard blocks or whose token
   * or credentials could not travel in a header. Runs before a config is stored.
   */
  checkConfig = async (config: TaskPushNotificationConfig): Promise<void> => {
    const { authentication, token } = config
    if (token !== undefined && !validHeaderValue(token)) {
      throw invalidParams([{ field: 'token', description: 'must be usable as an HTTP header value' }])
    }
    if (authentication !== undefined) {
      if (!TOKEN.test(authentication.scheme)) throw invalidParams([{ field: 'authentication.scheme', description: 'must be an HTTP auth scheme name' }])
      if (authentication.credentials !== undefined && !validHeaderValue(authentication.credentials)) {
        throw invalidParams([{ field: 'authentication.credentials', description: 'must be usable as an HTTP header value' }])
      }
    }
    try {
      await this.#guard.checkAtCreation(new URL(config.url), CREATION_LOOKUP_TIMEOUT)
    } catch (error) {
      if (!(error instanceof WebhookRefusedError)) throw error
      this.#logger.warn({ taskId: config.taskId, reason: error.detail }, 'push: a webhook URL was refused at config creation')
      throw invalidParams([{ field: 'url', description: `is refused: ${error.message}` }])
    }
  }

  /** Queues the event for every config of its task; `version` is the task's after it. Returns at once. */
  notify = (event: StreamResponse, ref: TaskRef, version?: number): void => {
    this.#queueLookup(event, ref, version, false)
  }

  /**
   * The task's instance died (the cluster): each config whose deliveries are recorded below the
   * task's stored `version` missed events that were stored and never recorded; it gets `event`,
   * the stored task, in its place. Queued like an event, so it goes before the events notified after.
   */
  catchUp = (event: StreamResponse, ref: TaskRef, version: number): void => {
    if (this.#outbox !== undefined) this.#queueLookup(event, ref, version, true)
  }

  /** Settles once the task's events notified so far have their deliveries recorded (or their lookup failed); undefined when none waits. */
  recorded (key: TaskKey): Promise<void> | undefined {
    return this.#lookups.get(topicOf(key.tenant, key.taskId))
  }

  #queueLookup (event: StreamResponse, ref: TaskRef, version: number | undefined, onlyBehind: boolean): void {
    if (this.#closing.signal.aborted) return
    // A store that knows at once that the task has no config spares the lookup (most tasks
    // have none); not while an earlier event's lookup waits, which keeps the order.
    const none = this.#store.hasConfigs?.(ref.taskId, ref.scope) === false
    if (none && this.#lookups.size === 0) return
    const topic = topicOf(ref.scope.tenant, ref.taskId)
    if (none && !this.#lookups.has(topic)) return
    const lookup: Lookup = { event, ref, version, onlyBehind, topic, epoch: this.#epoch }
    lookup.epoch.pending++
    lookup.tail = this.#lookUp(this.#lookups.get(topic), lookup)
    this.#lookups.set(topic, lookup.tail)
  }

  /**
   * One event's lookup, after the task's previous one: an async function, fewer promises per
   * event than a then/catch/finally chain. A store error is retried as a delivery's is, from the
   * page it failed on; past `maxAttempts` the event is reported failed with no config id.
   */
  async #lookUp (previous: Promise<void> | undefined, lookup: Lookup): Promise<void> {
    const { event, ref } = lookup
    try {
      await previous
      const cursor: FanOutCursor = {}
      for (let attempts = 1; ; attempts++) {
        try {
          await this.#fanOut(lookup, cursor)
          break
        } catch (error) {
          const signal = this.#closing.signal
          if (attempts >= this.#options.maxAttempts || signal.aborted) {
            this.#logger.error({ err: error, taskId: ref.taskId, attempts }, 'push: reading the push configs failed')
            this.#report({ event, ref, configId: '' }, { outcome: signal.aborted ? 'dropped' : 'failed', attempts, reason: signal.aborted ? 'closing' : 'store error' })
            break
          }
          this.#logger.warn({ err: error, taskId: ref.taskId, attempts }, 'push: reading the push configs failed on a store error; retrying')
          await this.#pause(attempts, signal)
        }
      }
    } finally {
      if (this.#lookups.get(lookup.topic) === lookup.tail) this.#lookups.delete(lookup.topic)
      this.#settle(lookup.epoch)
    }
  }

  /** Queues deliveries taken over from an instance that died, in their recorded order. */
  resume (deliveries: OutboxDelivery[]): void {
    for (const { id, tenant, taskId, contextId, configId, event } of deliveries) {
      this.#enqueue({ event, body: serializeStreamResponse(event), ref: { taskId, contextId, scope: { tenant } }, configId, outboxId: id, epoch: this.#epoch })
    }
  }

  /** Lookups and deliveries not finished: shutdown gives them a grace period. */
  get pending (): number {
    let pending = this.#epoch.pending
    for (const epoch of this.#closedEpochs) pending += epoch.pending
    return pending
  }

  /**
   * Resolves once every event notified so far has been delivered, given up or dropped (or left
   * to another instance); what is notified after the call does not hold it back.
   */
  idle (): Promise<void> {
    const current = this.#epoch
    if (current.pending === 0) return this.#closedEpochs.at(-1)?.idle ?? Promise.resolve()
    current.idle = new Promise(resolve => { current.resolve = resolve })
    this.#closedEpochs.push(current as Required<Epoch>)
    this.#epoch = { pending: 0 }
    return current.idle
  }

  /** Stops delivering: attempts in flight are aborted and queued events dropped (with an outbox, left in it for another instance). */
  close (): void {
    this.#closing.abort()
    this.#agents.http.destroy()
    this.#agents.https.destroy()
  }

  /** Queues the event for the task's configs, page by page from `cursor`, which it moves past each page queued. */
  async #fanOut ({ event, ref, version, onlyBehind, epoch }: Lookup, cursor: FanOutCursor): Promise<void> {
    do {
      const page = await this.#store.list(ref.taskId, { pageSize: PAGE_SIZE, pageToken: cursor.pageToken }, ref.scope)
      let configIds = page.configs.map(config => config.id as string)
      if (onlyBehind && configIds.length > 0) configIds = await this.#outbox?.behind(ref, configIds, version as number) ?? []
      const outboxIds = this.#outbox === undefined || configIds.length === 0 ? [] : await this.#outbox.record(ref, event, configIds, version)
      // Serialised only for a task that has configs: most tasks have none.
      configIds.forEach((configId, i) => this.#enqueue({ event, body: cursor.body ??= serializeStreamResponse(event), ref, configId, outboxId: outboxIds[i], epoch }))
      cursor.pageToken = page.nextPageToken
    } while (cursor.pageToken !== '')
  }

  /**
   * The config was deleted: its deliveries not yet attempted go without a report (as a deleted
   * config's always did), and the current one makes no further attempt (reported `failed`,
   * `config deleted`, when the attempt in flight does not succeed). Called once the
   * lookups of the task's earlier events are done, so none queues one for it afterwards.
   */
  configDeleted = (key: TaskKey, configId: string): void => {
    const queue = this.#queues.get(queueKeyOf({ configId, ref: { taskId: key.taskId, scope: { tenant: key.tenant } } }))
    if (queue === undefined) return
    queue.current.deleted = true
    for (let delivery = queue.waiting.shift(); delivery !== undefined; delivery = queue.waiting.shift()) this.#release(delivery)
  }

  #enqueue (delivery: Delivery): void {
    if (this.#closing.signal.aborted) return this.#closed(delivery, 0)
    if (this.#queued >= this.#options.maxQueued && !this.#makeRoom()) {
      this.#report(delivery, { outcome: 'dropped', attempts: 0, reason: 'queue full' })
      this.#forget(delivery)
      return
    }
    this.#queued++
    delivery.epoch.pending++
    const key = queueKeyOf(delivery)
    const queue = this.#queues.get(key)
    if (queue !== undefined) {
      queue.waiting.push(delivery)
      return
    }
    const fresh = { current: delivery, waiting: new Fifo<Delivery>() }
    this.#queues.set(key, fresh)
    this.#drain(key, fresh).catch((error: unknown) => this.#logger.error({ err: error }, 'push: delivery queue failed'))
  }

  /**
   * The queues are full: the longest drops its oldest delivery not yet attempted, so a webhook
   * that holds many back loses its own oldest events and never another config's turn (its
   * newest, such as the task's final status, stay). False when no queue has one waiting.
   */
  #makeRoom (): boolean {
    let longest: DeliveryQueue | undefined
    for (const queue of this.#queues.values()) if (queue.waiting.length > (longest?.waiting.length ?? 0)) longest = queue
    if (longest === undefined) return false
    const oldest = longest.waiting.shift() as Delivery
    this.#report(oldest, { outcome: 'dropped', attempts: 0, reason: 'queue full' })
    this.#release(oldest)
    return true
  }

  /** A delivery taken out of its queue before its attempt: its count and its outbox record go. */
  #release (delivery: Delivery): void {
    this.#forget(delivery)
    this.#queued--
    this.#settle(delivery.epoch)
  }

  async #drain (key: string, queue: DeliveryQueue): Promise<void> {
    for (let delivery: Delivery | undefined = queue.current; delivery !== undefined; delivery = queue.waiting.shift()) {
      queue.current = delivery
      try {
        await this.#deliver(delivery)
      } catch (error) {
        // What failed unforeseen ends this delivery, not the config's queue.
        this.#logger.error({ err: error, taskId: delivery.ref.taskId, configId: delivery.configId }, 'push: delivery failed')
        this.#report(delivery, { outcome: 'failed', attempts: 0, reason: 'error' })
      } finally {
        this.#forget(delivery)
        this.#queued--
        this.#settle(delivery.epoch)
      }
    }
    this.#queues.delete(key)
  }

  async #deliver (delivery: Delivery): Promise<void> {
    const { ref, configId } = delivery
    const signal = this.#closing.signal
    /** The last attempt's HTTP status, when it got an answer. */
    let status: number | undefined
    for (let attempts = 1; ; attempts++) {
      if (signal.aborted) return this.#closed(delivery, attempts - 1)
      if (delivery.deleted === true) return this.#gone(delivery, attempts - 1, status)
      let config: TaskPushNotificationConfig | undefined
      try {
        // Taken over by another instance (this one was taken for dead): that one delivers it.
        if (delivery.outboxId !== undefined && !(await this.#outbox?.owns(delivery.outboxId))) {
          delivery.kept = true
          return
        }
        // Read fresh each time: a deleted config gets nothing more; a replaced one its new URL.
        config = await this.#store.get(ref.taskId, configId, ref.scope)
      } catch (error) {
        // A store that failed (the configs, the outbox) may answer the next time: an attempt that failed.
        this.#logger.warn({ err: error, taskId: ref.taskId, configId, attempts }, 'push: delivery lookup failed on a store error')
        status = undefined
        if (attempts >= this.#options.maxAttempts) return this.#report(delivery, { outcome: 'failed', attempts, reason: 'store error' })
        await this.#pause(attempts, signal)
        continue
      }
      if (config === undefined) return this.#gone(delivery, attempts - 1, status)
      const attempt = await this.#attempt(config, delivery.body)
      status = attempt.status
      if (attempt.ok) return this.#report(delivery, { outcome: 'delivered', attempts, status: attempt.status })
      if (signal.aborted) return this.#closed(delivery, attempts)
      if (!attempt.retry || attempts >= this.#options.maxAttempts) {
        const outcome = attempt.refused === true ? 'refused' : 'failed'
        this.#logger.warn({ taskId: ref.taskId, configId, attempts, status: attempt.status, reason: attempt.reason }, `push delivery ${outcome}`)
        return this.#report(delivery, { outcome, attempts, status: attempt.status, reason: attempt.reason })
      }
      await this.#pause(attempts, signal, attempt.retryAfter)
    }
  }

  /**
   * The backoff after attempt number `attempts`, or the webhook's Retry-After when longer (never
   * past `maxRetryDelay`); closing cuts it short.
   */
  async #pause (attempts: number, signal: AbortSignal, retryAfter = 0): Promise<void> {
    try {
      await sleep(Math.max(this.#backoff(attempts), Math.min(retryAfter, this.#options.maxRetryDelay)), undefined, { signal })
    } catch {}
  }

  /**
   * Closing stops the delivery here. Without an outbox it is dropped. With one, its record stays
   * for another instance, which delivers and reports it: no report here, as for a delivery taken over.
   */
  #closed (delivery: Delivery, attempts: number): void {
    delivery.kept = true
    if (delivery.outboxId === undefined) this.#report(delivery, { outcome: 'dropped', attempts, reason: 'closing' })
  }

  /**
   * The delivery's config was deleted. Attempted already, the event is given up: `failed`,
   * `config deleted`. Not yet attempted, it goes without a report, as those still waiting do.
   */
  #gone (delivery: Delivery, attempts: number, status: number | undefined): void {
    if (attempts > 0) this.#report(delivery, { outcome: 'failed', attempts, status, reason: 'config deleted' })
  }

  /** The delivery had its outcome: its outbox record goes, unless another instance is to deliver it. */
  #forget (delivery: Delivery): void {
    if (delivery.outboxId === undefined || delivery.kept === true) return
    this.#outbox?.finish(delivery.outboxId).catch((error: unknown) => {
      this.#logger.warn({ err: error, taskId: delivery.ref.taskId, configId: delivery.configId }, 'push: could not clear a delivery from the outbox; it may be sent again')
    })
  }

  /** Exponential backoff with jitter: half the step is fixed, half random. */
  #backoff (retry: number): number {
    const step = Math.min(this.#options.maxRetryDelay, this.#options.retryDelay * 2 ** (retry - 1))
    return step / 2 + Math.random() * step / 2
  }

  async #attempt (config: TaskPushNotificationConfig, body: string): Promise<Attempt> {
    let url: URL
    try {
      url = new URL(config.url)
    } catch {
      return { ok: false, retry: false, reason: 'invalid URL' }
    }
    const host = hostOf(url)
    try {
      this.#guard.checkHost(host)
    } catch (error) {
      return { ok: false, retry: false, refused: true, reason: (error as WebhookRefusedError).detail }
    }
    const headers: Record<string, string> = {
      'content-type': 'application/a2a+json',
      'content-length': String(Buffer.byteLength(body))
    }
    if (config.authentication !== undefined) {
      const { scheme, credentials } = config.authentication
      headers.authorization = credentials === undefined || credentials === '' ? scheme : `${scheme} ${credentials}`
    }
    if (config.token !== undefined && config.token !== '') headers['x-a2a-notification-token'] = config.token
    const secure = url.protocol === 'https:'
    // An own timer, not AbortSignal.timeout inside AbortSignal.any: on Node 20 the timeout
    // signal can be garbage-collected before it fires, and the attempt then never ends
    // (nodejs/node#57736).
    const attempt = new AbortController()
    const { signal } = attempt
    const timer = setTimeout(() => attempt.abort(), this.#options.timeout)
    const abortOnClose = (): void => attempt.abort()
    this.#closing.signal.addEventListener('abort', abortOnClose, { once: true })
    try {
      return await this.#post(url, secure, headers, body, signal)
    } finally {
      clearTimeout(timer)
      this.#closing.signal.removeEventListener('abort', abortOnClose)
    }
  }

  #post (url: URL, secure: boolean, headers: Record<string, string>, body: string, signal: AbortSignal): Promise<Attempt> {
    return new Promise<Attempt>(resolve => {
      /** The response's verdict, once its status is in: an error after it (the deadline, say) does not change it. */
      let answer: Attempt | undefined
      let request: http.ClientRequest
      try {
        request = (secure ? httpsRequest : http.request)(url, {
          method: 'POST',
          headers,
          agent: secure ? this.#agents.https : this.#agents.http,
          lookup: this.#lookup(),
          signal
        }, response => {
          const status = response.statusCode ?? 0
          const decided: Attempt = status >= 200 && status < 300
            ? { ok: true, retry: false, status }
            : { ok: false, retry: status === 408 || status === 429 || status >= 500, status, reason: `HTTP ${status}` }
          if (status === 429 || status === 503) decided.retryAfter = retryAfterMs(response.headers['retry-after'])
          answer = decided
          // The body is not read, but drained so the connection can be reused, within the attempt's
          // deadline: the attempt ends with the body. A webhook that never ends it has its socket
          // destroyed at the deadline, and the status stands: a 2xx is delivered (any 2xx acknowledges).
          response.on('close', () => resolve(decided))
          response.resume()
        })
      } catch (error) {
        resolve({ ok: false, retry: false, reason: (error as { code?: string }).code ?? 'invalid request' })
        return
      }
      request.on('error', (error: Error & { code?: string }) => {
        if (answer !== undefined) resolve(answer)
        else if (error instanceof WebhookRefusedError) resolve({ ok: false, retry: false, refused: true, reason: error.detail })
        else if (signal.aborted) resolve({ ok: false, retry: true, reason: 'timeout' })
        else resolve({ ok: false, retry: true, reason: error.code ?? error.message })
      })
      request.end(body)
    })
  }

  /** The connection's DNS lookup: every address checked, so a name that now resolves inward is caught. */
  #lookup (): LookupFunction {
    return (hostname, options, callback) => {
      this.#guard.resolveForDelivery(hostname).then(addresses => {
        const family = typeof options.family === 'number' ? options.family : 0
        const usable = family === 0 ? addresses : addresses.filter(entry => entry.family === family)
        if (options.all === true) (callback as unknown as (error: null, addresses: unknown[]) => void)(null, usable)
        else {
          const [first] = usable
          if (first === undefined) callback(Object.assign(new Error(`${hostname} has no IPv${family} address`), { code: 'ENOTFOUND' }), '', 0)
          else callback(null, first.address, first.family)
        }
      }, (error: NodeJS.ErrnoException) => callback(error, '', 0))
    }
  }

  #report (delivery: Pick<Delivery, 'event' | 'ref' | 'configId'>, result: Omit<PushDeliveryReport, 'taskId' | 'configId' | 'tenant' | 'event'>): void {
    this.stats[result.outcome]++
    const report: PushDeliveryReport = {
      ...result,
      taskId: delivery.ref.taskId,
      configId: delivery.configId,
      tenant: delivery.ref.scope.tenant,
      event: Object.keys(delivery.event)[0] ?? ''
    }
    if (report.status === undefined) delete report.status
    if (report.reason === undefined) delete report.reason
    try {
      this.#options.onDelivery?.(report)
    } catch (error) {
      this.#logger.error({ err: error }, 'push: onDelivery threw')
    }
  }

  /** A lookup or a delivery of `epoch` finished; the `idle()` calls now satisfied resolve. */
  #settle (epoch: Epoch): void {
    if (--epoch.pending > 0 || epoch === this.#epoch) return
    const closed = this.#closedEpochs
    while (closed[0]?.pending === 0) (closed.shift() as Required<Epoch>).resolve()
  }
}

const httpsRequest = https.request as typeof http.request

function validHeaderValue (value: string): boolean {
  try {
    http.validateHeaderValue('x', value)
    return true
  } catch {
    return false
  }
}
