// Several instances acting as one agent (README, *Several instances*). What they share lives in a
// ClusterStore (PostgreSQL: `openPostgresStores(...).clusterStore`): which instances are
// alive, which instance runs which task (a lease), the messageIds already started, and the
// push deliveries not yet done. Liveness is the instance's heartbeat; a lease is live while
// its instance is.
import type { StreamResponse } from '../schema/wire.js'

/** One task, in one tenant. */
export interface TaskKey {
  tenant: string
  taskId: string
}

/** A push delivery as recorded: one event for one config of its task. */
export interface OutboxDelivery extends TaskKey {
  /** The record's id, unique in the store. */
  id: string
  contextId: string
  configId: string
  event: StreamResponse
}

export interface ClusterStore {
  /** Registers `instance`, alive for `ttl` ms from now (the store's clock). */
  register (instance: string, ttl: number): Promise<void>
  /**
   * Keeps `instance` alive for `ttl` ms more. False when it had already expired: other
   * instances may have taken its tasks and deliveries, so it must give them up.
   */
  renew (instance: string, ttl: number): Promise<boolean>
  /** Removes `instance` and its leases (a clean stop): what it left becomes the others' to take. */
  deregister (instance: string): Promise<void>
  /** Milliseconds until the first live instance other than `instance` expires; undefined when there is none. */
  nextExpiry (instance: string): Promise<number | undefined>

  /** `instance` runs the task (idempotent). */
  acquire (instance: string, key: TaskKey): Promise<void>
  /** `instance` no longer runs the task (idempotent). */
  release (instance: string, key: TaskKey): Promise<void>
  releaseAll (instance: string): Promise<void>
  /** The live instances holding a lease on the task. */
  owners (key: TaskKey): Promise<string[]>
  /**
   * Tasks that may have lost their instance: those with a lease of a dead instance, and those
   * SUBMITTED or WORKING that no instance holds. At most `limit`.
   */
  orphans (limit: number): Promise<TaskKey[]>
  /**
   * Drops the task's leases of dead instances and, when no live instance holds it any more,
   * gives it to `instance`: true then, and the caller ends (or resumes) the task. One caller
   * at a time per task, across instances.
   */
  claim (instance: string, key: TaskKey): Promise<boolean>

  /** Records that `messageId` started `taskId`. When it was already recorded: the task it started then. */
  claimMessage (tenant: string, messageId: string, taskId: string): Promise<string | undefined>
  /** Points `messageId` from task `from` to task `to`; false when it no longer pointed at `from`. */
  reclaimMessage (tenant: string, messageId: string, from: string, to: string): Promise<boolean>
  /** Forgets that `messageId` started `taskId` (its turn was refused before it began). */
  forgetMessage (tenant: string, messageId: string, taskId: string): Promise<void>

  /**
   * Records deliveries owned by `instance`, one per config; returns their ids in the order of
   * `configIds`. With the task's `version` after the event, in the same statement: the
   * configs' marks move up to it (the events up to it are recorded for them).
   */
  recordDeliveries (instance: string, key: TaskKey & { contextId: string }, event: StreamResponse, configIds: string[], version?: number): Promise<string[]>
  /** The config was created when the task was at `version`: it is owed the events after it. Keeps a mark already set. */
  markConfig (key: TaskKey, configId: string, version: number): Promise<void>
  /** The configs among `configIds` whose mark is below `version` (no mark counts as 0): they missed stored events. */
  configsBehind (key: TaskKey, configIds: string[], version: number): Promise<string[]>
  /** Does `instance` still own the delivery (no other took it over)? Asked before each attempt. */
  ownsDelivery (instance: string, id: string): Promise<boolean>
  /** The delivery had its outcome (delivered or given up): forgotten. */
  finishDelivery (id: string): Promise<void>
  /**
   * Gives `instance` the deliveries of dead instances, in recording order: those of the task
   * `key` (its claimer sends them before the task's last event), or, without `key`, those of
   * tasks no lease names.
   */
  takeDeliveries (instance: string, key?: TaskKey): Promise<OutboxDelivery[]>

  /**
   * Housekeeping: forgets messageIds recorded over `messageIdTtl` ms ago, dead instances that
   * left nothing, and the marks of ended (or expired) tasks no lease names.
   */
  tidy (messageIdTtl: number): Promise<void>
}

/** What becomes of a task whose instance died: ended FAILED, or handed to `executor.resume`. */
export type OrphanPolicy = 'fail' | 'resume'

export interface ClusterOptions {
  /** Where the instances meet: `(await openPostgresStores(...)).clusterStore`. Required. */
  store: ClusterStore
  /** This instance's id, unique in the cluster. Default: a random UUID at each start. */
  instanceId?: string
  /**
   * An instance that has not renewed its lease for this long, in ms, is taken for dead: its
   * tasks end (or resume) on another instance at most this long after it died. Default 30,000.
   */
  leaseTtl?: number
  /** How often the lease is renewed, in ms; less than `leaseTtl`. Default `leaseTtl / 3`. */
  heartbeatInterval?: number
  /** Longest pause between two looks for dead instances, in ms (one also runs as each lease expires). Default `leaseTtl / 3`. */
  sweepInterval?: number
  /** How long CancelTask waits for the instance running the task to confirm, in ms. Default `leaseTtl`. */
  cancelTimeout?: number
  /** `fail` (default): the task ends FAILED with a status message; `resume`: `executor.resume` takes it on. */
  onOrphan?: OrphanPolicy
  /** How long a messageId is remembered to deduplicate SendMessage, in ms. Default 86,400,000 (24 h). */
  messageIdTtl?: number
}

export interface NormalizedClusterOptions {
  store: ClusterStore
  instanceId: string
  leaseTtl: number
  heartbeatInterval: number
  sweepInterval: number
  cancelTimeout: number
  onOrphan: OrphanPolicy
  messageIdTtl: number
}

export const CLUSTER_DEFAULTS = {
  leaseTtl: 30_000,
  onOrphan: 'fail' as OrphanPolicy,
  messageIdTtl: 86_400_000
}

/** The status message of a task ended because its instance died. */
export const ORPHAN_MESSAGE = 'the instance running this task stopped before it finished'
