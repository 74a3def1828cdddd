// The proto presence rules that spec §8.4 applies to a card before it is canonicalised for a
// signature: a plain (non-`optional`, non-REQUIRED) field holding its default (`""`, `false`,
// `0`, an empty list or map) is dropped; REQUIRED fields, `optional` fields that are set and
// message fields that are present are kept as they are. A proto-based signer or verifier
// rebuilds the card this way, so the plugin signs and verifies the same bytes.

/** The plain fields of one message that hold scalars, lists or maps, and its nested messages. */
interface Shape {
  plain?: readonly string[]
  fields?: Readonly<Record<string, Nested>>
}

/** A nested message field: one message, a list of them, or a map to them. */
type Nested = { one: Shape } | { each: Shape } | { values: Shape }

const STRING_LIST: Shape = { plain: ['list'] }
const SECURITY_REQUIREMENT: Shape = { plain: ['schemes'], fields: { schemes: { values: STRING_LIST } } }
const DESCRIBED: Shape = { plain: ['description'] }

const OAUTH_FLOWS: Shape = {
  fields: {
    authorizationCode: { one: { plain: ['refreshUrl', 'pkceRequired'] } },
    clientCredentials: { one: { plain: ['refreshUrl'] } },
    deviceCode: { one: { plain: ['refreshUrl'] } },
    implicit: { one: { plain: ['authorizationUrl', 'refreshUrl', 'scopes'] } },
    password: { one: { plain: ['tokenUrl', 'refreshUrl', 'scopes'] } }
  }
}

const SECURITY_SCHEME: Shape = {
  fields: {
    apiKeySecurityScheme: { one: DESCRIBED },
    httpAuthSecurityScheme: { one: { plain: ['description', 'bearerFormat'] } },
    oauth2SecurityScheme: { one: { plain: ['description', 'oauth2MetadataUrl'], fields: { flows: { one: OAUTH_FLOWS } } } },
    openIdConnectSecurityScheme: { one: DESCRIBED },
    mtlsSecurityScheme: { one: DESCRIBED }
  }
}

const AGENT_CARD: Shape = {
  plain: ['securitySchemes', 'securityRequirements'],
  fields: {
    supportedInterfaces: { each: { plain: ['tenant'] } },
    capabilities: { one: { plain: ['extensions'], fields: { extensions: { each: { plain: ['uri', 'description', 'required'] } } } } },
    securitySchemes: { values: SECURITY_SCHEME },
    securityRequirements: { each: SECURITY_REQUIREMENT },
    skills: { each: { plain: ['examples', 'inputModes', 'outputModes', 'securityRequirements'], fields: { securityRequirements: { each: SECURITY_REQUIREMENT } } } }
  }
}

/** `card` as a proto-based implementation rebuilds it: plain fields holding defaults dropped. */
export function withPresenceRules (card: Record<string, unknown>): Record<string, unknown> {
  return shaped(card, AGENT_CARD) as Record<string, unknown>
}

function shaped (value: unknown, shape: Shape): unknown {
  if (!isRecord(value)) return value
  const result = record()
  for (const key of Object.keys(value)) {
    const field = value[key]
    if (shape.plain?.includes(key) === true && isDefault(field)) continue
    const nested = shape.fields?.[key]
    result[key] = nested === undefined ? field : shapedNested(field, nested)
  }
  return result
}

function shapedNested (value: unknown, nested: Nested): unknown {
  if ('one' in nested) return shaped(value, nested.one)
  if ('each' in nested) return Array.isArray(value) ? value.map(item => shaped(item, nested.each)) : value
  if (!isRecord(value)) return value
  const result = record()
  for (const key of Object.keys(value)) result[key] = shaped(value[key], nested.values)
  return result
}

/** Without a prototype, so that a `__proto__` key of a card read from JSON stays a member. */
function record (): Record<string, unknown> {
  return Object.create(null) as Record<string, unknown>
}

function isDefault (value: unknown): boolean {
  if (value === '' || value === false || value === 0) return true
  if (Array.isArray(value)) return value.length === 0
  return isRecord(value) && Object.keys(value).length === 0
}

function isRecord (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
