// TypeBox definitions of the A2A v1.0 data model (proto `lf.a2a.v1`, ProtoJSON names).
// These schemas are the single definition of every wire type: the exported
// TypeScript types are derived from them and the validators are compiled from them.
import Type, { type Static, type TSchema } from 'typebox'

/** Fields marked REQUIRED that are strings must be present and non-empty (ProtoJSON drops ""). */
const RequiredString = (options: object = {}) => Type.String({ minLength: 1, ...options })
/**
 * What stores key on (ids, contextId, tenant): at most 256 UTF-16 units, no NUL, no lone
 * surrogate, and neither "." nor "..". PostgreSQL text holds neither character (it stores a
 * lone surrogate as U+FFFD, so two tenants could become one), and its indexes take a row of a
 * few KiB at most. A URL resolves a path segment "." or ".." away, so over HTTP+JSON such a
 * tenant or id would name another path (`/./tasks` is `/tasks`, the default tenant's).
 */
export const KEY_MAX_LENGTH = 256
export const KEY_PATTERN = '^(?!\\.\\.?$)[^\\u0000\\p{Cs}]*$'
/** What a key that fails KEY_PATTERN is told. */
export const KEY_CHARACTERS = 'must hold no NUL character and no lone surrogate, and be neither "." nor ".."'
const KEY = new RegExp(KEY_PATTERN, 'u')
export const Key = (options: object = {}) => Type.String({ maxLength: KEY_MAX_LENGTH, pattern: KEY_PATTERN, ...options })
export const RequiredKey = () => Key({ minLength: 1 })
/** A value from outside the schemas (a tenant from a header or a resolver) checked as a `Key`. */
export const isKey = (value: string): boolean => value.length <= KEY_MAX_LENGTH && KEY.test(value)
const Struct = Type.Record(Type.String(), Type.Unknown())
const StringList = Type.Array(Type.String())
const Timestamp = Type.String({ format: 'date-time' })
/** A oneof: the member names present must be exactly one of `members`. */
function exactlyOne<T extends TSchema> (schema: T, members: readonly string[]) {
  const list = members.join(', ')
  return Type.Refine(schema, (value: unknown) => {
    let present = 0
    for (const member of members) if ((value as Record<string, unknown>)[member] !== undefined) present++
    return present === 1
  }, () => `must have exactly one of ${list}`)
}

export const TaskState = Type.Enum([
  'TASK_STATE_SUBMITTED',
  'TASK_STATE_WORKING',
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_REJECTED',
  'TASK_STATE_AUTH_REQUIRED'
])
export type TaskState = Static<typeof TaskState>

export const Role = Type.Enum(['ROLE_USER', 'ROLE_AGENT'])
export type Role = Static<typeof Role>

const STANDARD_BASE64 = /^[A-Za-z0-9+/]*$/
const URL_SAFE_BASE64 = /^[A-Za-z0-9_-]*$/

/**
 * Base64 as ProtoJSON reads `bytes`: the standard or the URL-safe alphabet (one of them),
 * padding optional; a padded text is a whole number of 4-character groups, and no text
 * ends in a lone character of a group (6 bits are no byte). Anything else no reader decodes.
 */
export function isBase64 (text: string): boolean {
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0
  const length = text.length - padding
  if (length % 4 === 1 || (padding > 0 && text.length % 4 !== 0)) return false
  const digits = padding === 0 ? text : text.slice(0, length)
  return STANDARD_BASE64.test(digits) || URL_SAFE_BASE64.test(digits)
}

const Base64 = Type.Refine(Type.String(), isBase64, () => 'must be base64: the standard or the URL-safe alphabet, padding optional')

export const Part = exactlyOne(Type.Object({
  text: Type.Optional(Type.String()),
  raw: Type.Optional(Base64),
  url: Type.Optional(Type.String()),
  data: Type.Optional(Type.Unknown()),
  metadata: Type.Optional(Struct),
  filename: Type.Optional(Type.String()),
  mediaType: Type.Optional(Type.String())
}), ['text', 'raw', 'url', 'data'])
export type Part = Static<typeof Part>

export const Message = Type.Object({
  messageId: RequiredKey(),
  contextId: Type.Optional(Key()),
  taskId: Type.Optional(Key()),
  role: Role,
  parts: Type.Array(Part, { minItems: 1 }),
  metadata: Type.Optional(Struct),
  extensions: Type.Optional(StringList),
  referenceTaskIds: Type.Optional(StringList)
})
export type Message = Static<typeof Message>

export const TaskStatus = Type.Object({
  state: TaskState,
  message: Type.Optional(Message),
  timestamp: Type.Optional(Timestamp)
})
export type TaskStatus = Static<typeof TaskStatus>

export const Artifact = Type.Object({
  artifactId: RequiredKey(),
  name: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  parts: Type.Array(Part, { minItems: 1 }),
  metadata: Type.Optional(Struct),
  extensions: Type.Optional(StringList)
})
export type Artifact = Static<typeof Artifact>

export const Task = Type.Object({
  id: RequiredString(),
  contextId: Type.Optional(Type.String()),
  status: TaskStatus,
  artifacts: Type.Optional(Type.Array(Artifact)),
  history: Type.Optional(Type.Array(Message)),
  metadata: Type.Optional(Struct)
})
export type Task = Static<typeof Task>

export const TaskStatusUpdateEvent = Type.Object({
  taskId: RequiredString(),
  contextId: RequiredString(),
  status: TaskStatus,
  metadata: Type.Optional(Struct)
})
export type TaskStatusUpdateEvent = Static<typeof TaskStatusUpdateEvent>

export const TaskArtifactUpdateEvent = Type.Object({
  taskId: RequiredString(),
  contextId: RequiredString(),
  artifact: Artifact,
  append: Type.Optional(Type.Boolean()),
  lastChunk: Type.Optional(Type.Boolean()),
  metadata: Type.Optional(Struct)
})
export type TaskArtifactUpdateEvent = Static<typeof TaskArtifactUpdateEvent>

export const StreamResponse = exactlyOne(Type.Object({
  task: Type.Optional(Task),
  message: Type.Optional(Message),
  statusUpdate: Type.Optional(TaskStatusUpdateEvent),
  artifactUpdate: Type.Optional(TaskArtifactUpdateEvent)
}), ['task', 'message', 'statusUpdate', 'artifactUpdate'])
export type StreamResponse = Static<typeof StreamResponse>

export const SendMessageResponse = exactlyOne(Type.Object({
  task: Type.Optional(Task),
  message: Type.Optional(Message)
}), ['task', 'message'])
export type SendMessageResponse = Static<typeof SendMessageResponse>

export const AuthenticationInfo = Type.Object({
  scheme: RequiredString(),
  credentials: Type.Optional(Type.String())
})
export type AuthenticationInfo = Static<typeof AuthenticationInfo>

export const TaskPushNotificationConfig = Type.Object({
  tenant: Type.Optional(Key()),
  id: Type.Optional(Key()),
  taskId: Type.Optional(Key()),
  url: RequiredString(),
  token: Type.Optional(Type.String()),
  authentication: Type.Optional(AuthenticationInfo)
})
export type TaskPushNotificationConfig = Static<typeof TaskPushNotificationConfig>

// ---- Agent card -----------------------------------------------------------------

export const AgentInterface = Type.Object({
  url: RequiredString(),
  protocolBinding: RequiredString(),
  tenant: Type.Optional(Type.String()),
  protocolVersion: RequiredString()
})
export type AgentInterface = Static<typeof AgentInterface>

export const AgentProvider = Type.Object({ url: RequiredString(), organization: RequiredString() })

export const AgentExtension = Type.Object({
  uri: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  required: Type.Optional(Type.Boolean()),
  params: Type.Optional(Struct)
})
export type AgentExtension = Static<typeof AgentExtension>

export const AgentCapabilities = Type.Object({
  streaming: Type.Optional(Type.Boolean()),
  pushNotifications: Type.Optional(Type.Boolean()),
  extensions: Type.Optional(Type.Array(AgentExtension)),
  extendedAgentCard: Type.Optional(Type.Boolean())
})
export type AgentCapabilities = Static<typeof AgentCapabilities>

// Both plain proto fields: ProtoJSON may leave out an empty map or list (`{"bearer":{}}`).
export const SecurityRequirement = Type.Object({
  schemes: Type.Optional(Type.Record(Type.String(), Type.Object({ list: Type.Optional(StringList) })))
})
export type SecurityRequirement = Static<typeof SecurityRequirement>

const Scopes = Type.Record(Type.String(), Type.String())
const OAuthFlows = exactlyOne(Type.Object({
  authorizationCode: Type.Optional(Type.Object({
    authorizationUrl: RequiredString(),
    tokenUrl: RequiredString(),
    refreshUrl: Type.Optional(Type.String()),
    scopes: Scopes,
    pkceRequired: Type.Optional(Type.Boolean())
  })),
  clientCredentials: Type.Optional(Type.Object({
    tokenUrl: RequiredString(), refreshUrl: Type.Optional(Type.String()), scopes: Scopes
  })),
  deviceCode: Type.Optional(Type.Object({
    deviceAuthorizationUrl: RequiredString(), tokenUrl: RequiredString(), refreshUrl: Type.Optional(Type.String()), scopes: Scopes
  })),
  implicit: Type.Optional(Type.Object({
    authorizationUrl: Type.Optional(Type.String()), refreshUrl: Type.Optional(Type.String()), scopes: Type.Optional(Scopes)
  })),
  password: Type.Optional(Type.Object({
    tokenUrl: Type.Optional(Type.String()), refreshUrl: Type.Optional(Type.String()), scopes: Type.Optional(Scopes)
  }))
}), ['authorizationCode', 'clientCredentials', 'deviceCode', 'implicit', 'password'])

const description = Type.Optional(Type.String())
export const SecurityScheme = exactlyOne(Type.Object({
  apiKeySecurityScheme: Type.Optional(Type.Object({
    description, location: Type.Enum(['query', 'header', 'cookie']), name: RequiredString()
  })),
  httpAuthSecurityScheme: Type.Optional(Type.Object({
    description, scheme: RequiredString(), bearerFormat: Type.Optional(Type.String())
  })),
  oauth2SecurityScheme: Type.Optional(Type.Object({
    description, flows: OAuthFlows, oauth2MetadataUrl: Type.Optional(Type.String())
  })),
  openIdConnectSecurityScheme: Type.Optional(Type.Object({ description, openIdConnectUrl: RequiredString() })),
  mtlsSecurityScheme: Type.Optional(Type.Object({ description }))
}), ['apiKeySecurityScheme', 'httpAuthSecurityScheme', 'oauth2SecurityScheme', 'openIdConnectSecurityScheme', 'mtlsSecurityScheme'])
export type SecurityScheme = Static<typeof SecurityScheme>

export const AgentSkill = Type.Object({
  id: RequiredString(),
  name: RequiredString(),
  description: Type.String(),
  tags: Type.Array(Type.String(), { minItems: 1 }),
  examples: Type.Optional(StringList),
  inputModes: Type.Optional(StringList),
  outputModes: Type.Optional(StringList),
  securityRequirements: Type.Optional(Type.Array(SecurityRequirement))
})
export type AgentSkill = Static<typeof AgentSkill>

export const AgentCardSignature = Type.Object({
  protected: RequiredString(),
  signature: RequiredString(),
  header: Type.Optional(Struct)
})

const agentCardFields = {
  name: RequiredString(),
  description: Type.String(),
  provider: Type.Optional(AgentProvider),
  version: RequiredString(),
  documentationUrl: Type.Optional(Type.String()),
  capabilities: AgentCapabilities,
  securitySchemes: Type.Optional(Type.Record(Type.String(), SecurityScheme)),
  securityRequirements: Type.Optional(Type.Array(SecurityRequirement)),
  defaultInputModes: Type.Array(Type.String(), { minItems: 1 }),
  defaultOutputModes: Type.Array(Type.String(), { minItems: 1 }),
  skills: Type.Array(AgentSkill),
  signatures: Type.Optional(Type.Array(AgentCardSignature)),
  iconUrl: Type.Optional(Type.String())
}

export const AgentCard = Type.Object({
  ...agentCardFields,
  supportedInterfaces: Type.Array(AgentInterface, { minItems: 1 })
})
export type AgentCard = Static<typeof AgentCard>

/** The card a user gives the plugin: the interfaces this instance serves are generated. */
export const AgentCardInput = Type.Object({
  ...agentCardFields,
  supportedInterfaces: Type.Optional(Type.Array(AgentInterface))
})
export type AgentCardInput = Static<typeof AgentCardInput>
