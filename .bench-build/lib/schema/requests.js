// Requests and responses of the eleven A2A v1.0 operations (spec §3), in ProtoJSON.
import Type from 'typebox';
import { Message, Task, TaskPushNotificationConfig, TaskState } from './wire.js';
const Tenant = Type.Optional(Type.String());
const RequiredString = () => Type.String({ minLength: 1 });
const HistoryLength = Type.Optional(Type.Integer({ minimum: 0, maximum: 2147483647 }));
export const SendMessageConfiguration = Type.Object({
    acceptedOutputModes: Type.Optional(Type.Array(Type.String())),
    taskPushNotificationConfig: Type.Optional(TaskPushNotificationConfig),
    historyLength: HistoryLength,
    returnImmediately: Type.Optional(Type.Boolean())
});
export const SendMessageRequest = Type.Object({
    tenant: Tenant,
    message: Message,
    configuration: Type.Optional(SendMessageConfiguration),
    metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown()))
});
export const GetTaskRequest = Type.Object({ tenant: Tenant, id: RequiredString(), historyLength: HistoryLength });
export const ListTasksRequest = Type.Object({
    tenant: Tenant,
    contextId: Type.Optional(Type.String()),
    status: Type.Optional(TaskState),
    pageSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
    pageToken: Type.Optional(Type.String()),
    historyLength: HistoryLength,
    statusTimestampAfter: Type.Optional(Type.String({ format: 'date-time' })),
    includeArtifacts: Type.Optional(Type.Boolean())
});
export const ListTasksResponse = Type.Object({
    tasks: Type.Array(Task),
    nextPageToken: Type.String(),
    pageSize: Type.Integer(),
    totalSize: Type.Integer()
});
export const CancelTaskRequest = Type.Object({
    tenant: Tenant,
    id: RequiredString(),
    metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown()))
});
export const SubscribeToTaskRequest = Type.Object({ tenant: Tenant, id: RequiredString() });
/** CreateTaskPushNotificationConfig takes the config itself; the owning task is required. */
export const CreateTaskPushNotificationConfigRequest = Type.Intersect([
    TaskPushNotificationConfig,
    Type.Object({ taskId: RequiredString() })
]);
export const GetTaskPushNotificationConfigRequest = Type.Object({ tenant: Tenant, taskId: RequiredString(), id: RequiredString() });
export const DeleteTaskPushNotificationConfigRequest = GetTaskPushNotificationConfigRequest;
export const ListTaskPushNotificationConfigsRequest = Type.Object({
    tenant: Tenant,
    taskId: RequiredString(),
    pageSize: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
    pageToken: Type.Optional(Type.String())
});
export const ListTaskPushNotificationConfigsResponse = Type.Object({
    configs: Type.Array(TaskPushNotificationConfig),
    nextPageToken: Type.String()
});
export const GetExtendedAgentCardRequest = Type.Object({ tenant: Tenant });
//# sourceMappingURL=requests.js.map