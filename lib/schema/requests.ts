// Requests and responses of the eleven A2A v1.0 operations (spec §3), in ProtoJSON.
import Type, { type Static } from 'typebox'
import { Key, Message, RequiredKey, Task, TaskPushNotificationConfig, TaskState } from './wire.js'

const Tenant = Type.Optional(Key())
const HistoryLength = Type.Optional(Type.Integer({ minimum: 0, maximum: 2147483647 }))

export const SendMessageConfiguration = Type.Object({
  acceptedOutputModes: Type.Optional(Type.Array(Type.String())),
  taskPushNotificationConfig: Type.Optional(TaskPushNotificationConfig),
  historyLength: HistoryLength,
  returnImmediately: Type.Optional(Type.Boolean())
})
export type SendMessageConfiguration = Static<typeof SendMessageConfiguration>

export const SendMessageRequest = Type.Object({
  tenant: Tenant,
  message: Message,
  configuration: Type.Optional(SendMessageConfiguration),
  metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown()))
})
export type SendMessageRequest = Static<typeof SendMessageRequest>

export const GetTaskRequest = Type.Object({ tenant: Tenant, id: RequiredKey(), historyLength: HistoryLength })
export type GetTaskRequest = Static<typeof GetTaskRequest>

// ProtoJSON: a plain field holding its default (`""`, the enum's 0) is as good as absent, so
// these two filter nothing then.
export const LIST_ANY_STATE = 'TASK_STATE_UNSPECIFIED'

export const ListTasksRequest = Type.Object({
  tenant: Tenant,
  contextId: Type.Optional(Key()),
  status: Type.Optional(Type.Enum([LIST_ANY_STATE, ...TaskState.enum])),
  pageSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  pageToken: Type.Optional(Type.String()),
  historyLength: HistoryLength,
  statusTimestampAfter: Type.Optional(Type.String({ format: 'date-time' })),
  includeArtifacts: Type.Optional(Type.Boolean())
})
export type ListTasksRequest = Static<typeof ListTasksRequest>

export const ListTasksResponse = Type.Object({
  tasks: Type.Array(Task),
  nextPageToken: Type.String(),
  pageSize: Type.Integer(),
  totalSize: Type.Integer()
})
export type ListTasksResponse = Static<typeof ListTasksResponse>

export const CancelTaskRequest = Type.Object({
  tenant: Tenant,
  id: RequiredKey(),
  metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown()))
})
export type CancelTaskRequest = Static<typeof CancelTaskRequest>

export const SubscribeToTaskRequest = Type.Object({ tenant: Tenant, id: RequiredKey() })
export type SubscribeToTaskRequest = Static<typeof SubscribeToTaskRequest>

/** CreateTaskPushNotificationConfig takes the config itself; the owning task is required. */
export const CreateTaskPushNotificationConfigRequest = Type.Intersect([
  TaskPushNotificationConfig,
  Type.Object({ taskId: RequiredKey() })
])
export type CreateTaskPushNotificationConfigRequest = Static<typeof CreateTaskPushNotificationConfigRequest>

export const GetTaskPushNotificationConfigRequest = Type.Object({ tenant: Tenant, taskId: RequiredKey(), id: RequiredKey() })
export type GetTaskPushNotificationConfigRequest = Static<typeof GetTaskPushNotificationConfigRequest>

export const DeleteTaskPushNotificationConfigRequest = GetTaskPushNotificationConfigRequest
export type DeleteTaskPushNotificationConfigRequest = GetTaskPushNotificationConfigRequest

export const ListTaskPushNotificationConfigsRequest = Type.Object({
  tenant: Tenant,
  taskId: RequiredKey(),
  // The method sets no maximum: a larger page is served at the server's (MAX_PUSH_PAGE_SIZE).
  pageSize: Type.Optional(Type.Integer({ minimum: 0, maximum: 2147483647 })),
  pageToken: Type.Optional(Type.String())
})
export type ListTaskPushNotificationConfigsRequest = Static<typeof ListTaskPushNotificationConfigsRequest>

export const ListTaskPushNotificationConfigsResponse = Type.Object({
  configs: Type.Array(TaskPushNotificationConfig),
  nextPageToken: Type.String()
})
export type ListTaskPushNotificationConfigsResponse = Static<typeof ListTaskPushNotificationConfigsResponse>

export const GetExtendedAgentCardRequest = Type.Object({ tenant: Tenant })
export type GetExtendedAgentCardRequest = Static<typeof GetExtendedAgentCardRequest>

// What RFC 3339 (the format) allows and a ProtoJSON Timestamp does not: year 0000, a leap
// second, more than nine digits of fraction, an RFC 9557 suffix.
const TIMESTAMP = /^(?!0000)\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:[0-5]\d(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/

/**
 * The first millisecond a `statusTimestampAfter` admits, or undefined for an RFC 3339 text
 * that is no ProtoJSON Timestamp. Stored timestamps have millisecond precision and
 * `Date.parse` drops digits past it, so a fraction below a millisecond moves the bound to the
 * next one: `>=` then keeps only timestamps at or after the instant given.
 */
export function timestampAfterMillis (timestamp: string): number | undefined {
  const form = TIMESTAMP.exec(timestamp)
  if (form === null) return undefined
  const millis = Date.parse(timestamp)
  return /[1-9]/.test(form[1]?.slice(4) ?? '') ? millis + 1 : millis
}
