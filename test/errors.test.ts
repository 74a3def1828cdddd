// The error table and its renderers: every row maps to its JSON-RPC code, HTTP status,
// gRPC status and ErrorInfo reason, the same way on every binding.
import t from 'tap'
import {
  A2AErrorBase, ContentTypeNotSupportedError, InternalError, StreamLaggedError, TaskNotFoundError, UnauthenticatedError,
  errorTable, invalidParams, isA2AError, retryInfo, toA2AError, toJsonRpcError, toRestError
} from '../lib/index.js'
import * as errors from '../lib/errors/index.js'

const v101 = {
  TaskNotFound: [-32001, 404, 'NOT_FOUND', 'TASK_NOT_FOUND'],
  TaskNotCancelable: [-32002, 400, 'FAILED_PRECONDITION', 'TASK_NOT_CANCELABLE'],
  PushNotificationNotSupported: [-32003, 400, 'FAILED_PRECONDITION', 'PUSH_NOTIFICATION_NOT_SUPPORTED'],
  UnsupportedOperation: [-32004, 400, 'FAILED_PRECONDITION', 'UNSUPPORTED_OPERATION'],
  ContentTypeNotSupported: [-32005, 400, 'INVALID_ARGUMENT', 'CONTENT_TYPE_NOT_SUPPORTED'],
  InvalidAgentResponse: [-32006, 500, 'INTERNAL', 'INVALID_AGENT_RESPONSE'],
  ExtendedAgentCardNotConfigured: [-32007, 400, 'FAILED_PRECONDITION', 'EXTENDED_AGENT_CARD_NOT_CONFIGURED'],
  ExtensionSupportRequired: [-32008, 400, 'FAILED_PRECONDITION', 'EXTENSION_SUPPORT_REQUIRED'],
  VersionNotSupported: [-32009, 400, 'FAILED_PRECONDITION', 'VERSION_NOT_SUPPORTED']
} as const

t.test('the v1.0.1 table, row by row', async t => {
  for (const [name, [code, http, grpc, reason]] of Object.entries(v101)) {
    const row = errorTable[name as keyof typeof v101]
    t.same([row.jsonRpcCode, row.httpStatus, row.grpcStatus, row.reason], [code, http, grpc, reason], name)
  }
  t.same(['JsonParse', 'InvalidRequest', 'MethodNotFound', 'InvalidParams', 'Internal'].map(n => errorTable[n as 'Internal'].jsonRpcCode),
    [-32700, -32600, -32601, -32602, -32603])
})

t.test('every row has an exported @fastify/error class with an A2A_ERR_ code', async t => {
  for (const [name, row] of Object.entries(errorTable)) {
    const ErrorClass = (errors as Record<string, unknown>)[`${name}Error`] as new (...a: unknown[]) => Error & { code: string, statusCode: number }
    t.type(ErrorClass, 'function', name)
    const error = new ErrorClass('x')
    t.ok(error.code.startsWith('A2A_ERR_'), row.code)
    t.equal(error.code, row.code)
    t.equal(error.statusCode, row.httpStatus)
    t.ok(isA2AError(error))
    t.ok(error instanceof A2AErrorBase)
    t.ok(error instanceof ErrorClass)
  }
  t.notOk(new TaskNotFoundError('x') instanceof ContentTypeNotSupportedError)
})

t.test('JSON-RPC rendering: data is an array with ErrorInfo first', async t => {
  const error = new TaskNotFoundError('task-9').with({ metadata: { taskId: 'task-9' } })
  t.same(toJsonRpcError(error), {
    code: -32001,
    message: 'Task not found: task-9',
    data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org', metadata: { taskId: 'task-9' } }]
  })
})

t.test('REST rendering: google.rpc.Status with the HTTP status and gRPC name', async t => {
  t.same(toRestError(new TaskNotFoundError('task-123')), {
    error: {
      code: 404,
      status: 'NOT_FOUND',
      message: 'Task not found: task-123',
      details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org' }]
    }
  })
})

t.test('invalid params carry a BadRequest and no ErrorInfo', async t => {
  t.same(toRestError(invalidParams([{ field: 'message.parts', description: 'must not have fewer than 1 items' }])), {
    error: {
      code: 400,
      status: 'INVALID_ARGUMENT',
      message: 'Invalid parameters: message.parts must not have fewer than 1 items',
      details: [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'message.parts', description: 'must not have fewer than 1 items' }] }]
    }
  })
})

t.test('binding refusals put their ErrorInfo after the other details (seed 000 §6)', async t => {
  const error = new UnauthenticatedError().with({ metadata: { 'www-authenticate': 'Bearer realm="a2a"' }, details: [retryInfo(1500)] })
  t.same(toJsonRpcError(error), {
    code: -32600,
    message: 'authentication required',
    data: [
      { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1.5s' },
      { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'UNAUTHENTICATED', domain: 'a2a-rust.com', metadata: { 'www-authenticate': 'Bearer realm="a2a"' } }
    ]
  })
  t.same(toJsonRpcError(new StreamLaggedError(3).with({ metadata: { droppedEvents: '3' } })).data, [
    { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'STREAM_LAGGED', domain: 'a2a-rust.com', metadata: { droppedEvents: '3' } }
  ])
})

t.test('an unknown error becomes -32603 without its message', async t => {
  const secret = new Error('db password is hunter2')
  const error = toA2AError(secret)
  t.ok(error instanceof InternalError)
  t.same(toJsonRpcError(error), { code: -32603, message: 'Internal error' })
  t.equal(error.cause, secret)
  t.same(toRestError(error), { error: { code: 500, status: 'INTERNAL', message: 'Internal error' } })
})
