// The one error table: every A2A error of the v1.0.1 spec (§5.2), the five standard
// JSON-RPC errors, and the few errors the bindings need of their own. Every binding
// renders an error from its row, so the same error maps the same way everywhere.
export const A2A_DOMAIN = 'a2a-protocol.org';
/** The domain of the WebSocket binding's own ErrorInfo reasons (seed 000 §5, §6). */
export const BINDING_DOMAIN = 'a2a-rust.com';
export const errorTable = {
    TaskNotFound: { code: 'A2A_ERR_TASK_NOT_FOUND', message: 'Task not found: %s', jsonRpcCode: -32001, httpStatus: 404, grpcStatus: 'NOT_FOUND', reason: 'TASK_NOT_FOUND' },
    TaskNotCancelable: { code: 'A2A_ERR_TASK_NOT_CANCELABLE', message: 'Task cannot be canceled: %s', jsonRpcCode: -32002, httpStatus: 400, grpcStatus: 'FAILED_PRECONDITION', reason: 'TASK_NOT_CANCELABLE' },
    PushNotificationNotSupported: { code: 'A2A_ERR_PUSH_NOTIFICATION_NOT_SUPPORTED', message: 'Push notifications are not supported', jsonRpcCode: -32003, httpStatus: 400, grpcStatus: 'FAILED_PRECONDITION', reason: 'PUSH_NOTIFICATION_NOT_SUPPORTED' },
    UnsupportedOperation: { code: 'A2A_ERR_UNSUPPORTED_OPERATION', message: 'Unsupported operation: %s', jsonRpcCode: -32004, httpStatus: 400, grpcStatus: 'FAILED_PRECONDITION', reason: 'UNSUPPORTED_OPERATION' },
    ContentTypeNotSupported: { code: 'A2A_ERR_CONTENT_TYPE_NOT_SUPPORTED', message: 'Content type not supported: %s', jsonRpcCode: -32005, httpStatus: 400, grpcStatus: 'INVALID_ARGUMENT', reason: 'CONTENT_TYPE_NOT_SUPPORTED' },
    InvalidAgentResponse: { code: 'A2A_ERR_INVALID_AGENT_RESPONSE', message: 'Invalid agent response: %s', jsonRpcCode: -32006, httpStatus: 500, grpcStatus: 'INTERNAL', reason: 'INVALID_AGENT_RESPONSE' },
    ExtendedAgentCardNotConfigured: { code: 'A2A_ERR_EXTENDED_AGENT_CARD_NOT_CONFIGURED', message: 'Extended agent card is not configured', jsonRpcCode: -32007, httpStatus: 400, grpcStatus: 'FAILED_PRECONDITION', reason: 'EXTENDED_AGENT_CARD_NOT_CONFIGURED' },
    ExtensionSupportRequired: { code: 'A2A_ERR_EXTENSION_SUPPORT_REQUIRED', message: 'Extension support required: %s', jsonRpcCode: -32008, httpStatus: 400, grpcStatus: 'FAILED_PRECONDITION', reason: 'EXTENSION_SUPPORT_REQUIRED' },
    VersionNotSupported: { code: 'A2A_ERR_VERSION_NOT_SUPPORTED', message: 'A2A version %s is not supported; supported versions: 1.0', jsonRpcCode: -32009, httpStatus: 400, grpcStatus: 'FAILED_PRECONDITION', reason: 'VERSION_NOT_SUPPORTED' },
    JsonParse: { code: 'A2A_ERR_JSON_PARSE', message: 'Invalid JSON payload', jsonRpcCode: -32700, httpStatus: 400, grpcStatus: 'INVALID_ARGUMENT' },
    InvalidRequest: { code: 'A2A_ERR_INVALID_REQUEST', message: 'Request payload validation error: %s', jsonRpcCode: -32600, httpStatus: 400, grpcStatus: 'INVALID_ARGUMENT' },
    MethodNotFound: { code: 'A2A_ERR_METHOD_NOT_FOUND', message: 'Method not found: %s', jsonRpcCode: -32601, httpStatus: 404, grpcStatus: 'NOT_FOUND' },
    InvalidParams: { code: 'A2A_ERR_INVALID_PARAMS', message: 'Invalid parameters: %s', jsonRpcCode: -32602, httpStatus: 400, grpcStatus: 'INVALID_ARGUMENT' },
    Internal: { code: 'A2A_ERR_INTERNAL', message: 'Internal error', jsonRpcCode: -32603, httpStatus: 500, grpcStatus: 'INTERNAL' },
    PayloadTooLarge: { code: 'A2A_ERR_PAYLOAD_TOO_LARGE', message: 'Request payload is larger than %d bytes', jsonRpcCode: -32600, httpStatus: 413, grpcStatus: 'INVALID_ARGUMENT' },
    UnsupportedMediaType: { code: 'A2A_ERR_UNSUPPORTED_MEDIA_TYPE', message: 'Unsupported media type %s: send application/a2a+json or application/json', jsonRpcCode: -32600, httpStatus: 415, grpcStatus: 'INVALID_ARGUMENT' },
    Unauthenticated: { code: 'A2A_ERR_UNAUTHENTICATED', message: 'authentication required', jsonRpcCode: -32600, httpStatus: 401, grpcStatus: 'UNAUTHENTICATED', reason: 'UNAUTHENTICATED', domain: BINDING_DOMAIN },
    PermissionDenied: { code: 'A2A_ERR_PERMISSION_DENIED', message: 'permission denied', jsonRpcCode: -32600, httpStatus: 403, grpcStatus: 'PERMISSION_DENIED', reason: 'PERMISSION_DENIED', domain: BINDING_DOMAIN },
    RateLimited: { code: 'A2A_ERR_RATE_LIMITED', message: 'Rate limit exceeded: %d calls per %d ms', jsonRpcCode: -32603, httpStatus: 429, grpcStatus: 'RESOURCE_EXHAUSTED' },
    OriginNotAllowed: { code: 'A2A_ERR_ORIGIN_NOT_ALLOWED', message: 'Origin %s is not allowed', jsonRpcCode: -32600, httpStatus: 403, grpcStatus: 'PERMISSION_DENIED' },
    Unavailable: { code: 'A2A_ERR_UNAVAILABLE', message: 'Service unavailable: %s', jsonRpcCode: -32603, httpStatus: 503, grpcStatus: 'UNAVAILABLE' },
    StreamLagged: { code: 'A2A_ERR_STREAM_LAGGED', message: 'Stream subscriber fell behind; %d events dropped', jsonRpcCode: -32603, httpStatus: 500, grpcStatus: 'RESOURCE_EXHAUSTED', reason: 'STREAM_LAGGED', domain: BINDING_DOMAIN },
    // The a2a.v1 WebSocket dialect's own refusals (seed 001), in the JSON-RPC server-error range.
    TooManyStreams: { code: 'A2A_ERR_TOO_MANY_STREAMS', message: 'Too many concurrent streams', jsonRpcCode: -32000, httpStatus: 429, grpcStatus: 'RESOURCE_EXHAUSTED' },
    MessageRateLimited: { code: 'A2A_ERR_MESSAGE_RATE_LIMITED', message: 'Rate limit exceeded', jsonRpcCode: -32000, httpStatus: 429, grpcStatus: 'RESOURCE_EXHAUSTED' }
};
//# sourceMappingURL=table.js.map