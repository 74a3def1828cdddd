// The compiled wire validators: required fields, non-empty arrays, exact enum strings,
// oneofs, unknown fields, and the BadRequest field paths they report.
import t from 'tap'
import {
  AgentCardInput, GetTaskRequest, ListTasksRequest, SendMessageRequest, StreamResponse, compile
} from '../lib/index.js'

const send = compile(SendMessageRequest)
const message = (fields: object) => ({ message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hi' }], ...fields } })

t.test('a valid request passes, unknown fields ignored', async t => {
  const checked = send.check({ ...message({ futureField: 1 }), alsoUnknown: true })
  t.equal(checked.ok, true)
})

t.test('role "user" (the v0.3 spelling) is refused with the field named', async t => {
  t.same(send.check(message({ role: 'user' })), {
    ok: false,
    violations: [{ field: 'message.role', description: 'must be equal to one of the allowed values' }]
  })
})

t.test('integer enum values are not accepted: only the exact strings', async t => {
  t.equal(send.check(message({ role: 1 })).ok, false)
  t.equal(send.check(message({ role: 'ROLE_UNSPECIFIED' })).ok, false)
})

t.test('empty parts are refused', async t => {
  t.same(send.check(message({ parts: [] })), {
    ok: false,
    violations: [{ field: 'message.parts', description: 'must not have fewer than 1 items' }]
  })
})

t.test('a part with two content members, or none, is refused at its index', async t => {
  t.same(send.check(message({ parts: [{ text: 'a' }, { text: 'b', url: 'https://x' }, { mediaType: 'text/plain' }] })), {
    ok: false,
    violations: [
      { field: 'message.parts[1]', description: 'must have exactly one of text, raw, url, data' },
      { field: 'message.parts[2]', description: 'must have exactly one of text, raw, url, data' }
    ]
  })
})

t.test('each part kind passes: text, raw (base64), url, data of any JSON type', async t => {
  for (const part of [{ text: '' }, { raw: 'aGk=', filename: 'a.txt' }, { url: 'https://x/a.pdf', mediaType: 'application/pdf' }, { data: null }, { data: [1] }, { data: { k: 1 } }]) {
    t.equal(send.check(message({ parts: [part] })).ok, true, JSON.stringify(part))
  }
  t.equal(send.check(message({ parts: [{ raw: 'not base64!' }] })).ok, false)
})

t.test('raw is base64 a ProtoJSON reader decodes: either alphabet, padding optional, no lone last character', async t => {
  for (const raw of ['', 'aGk=', 'aGk', 'AA==', 'AA', 'AAEC/w==', 'AAEC_w', 'AAEC-w==', 'AAAA']) {
    t.equal(send.check(message({ parts: [{ raw }] })).ok, true, raw)
  }
  // A lone last character (6 bits), both alphabets at once, padding that does not complete a group.
  for (const raw of ['A', 'AAAAA', 'AAEC/w_-', 'AA=', 'AAEC=', 'AAAA==', '====', '=']) {
    t.same(send.check(message({ parts: [{ raw }] })), {
      ok: false,
      violations: [{ field: 'message.parts[0].raw', description: 'must be base64: the standard or the URL-safe alphabet, padding optional' }]
    }, raw)
  }
})

t.test('missing required fields are each named', async t => {
  t.same(send.check({ message: { parts: [{ text: 'x' }] } }), {
    ok: false,
    violations: [
      { field: 'message.messageId', description: 'is required' },
      { field: 'message.role', description: 'is required' }
    ]
  })
  t.same(send.check({}), { ok: false, violations: [{ field: 'message', description: 'is required' }] })
  t.same(compile(GetTaskRequest).check({ id: '' }), { ok: false, violations: [{ field: 'id', description: 'is required' }] })
})

t.test('ListTasks bounds: pageSize 1..100, historyLength >= 0, status enum, ISO timestamps', async t => {
  const list = compile(ListTasksRequest)
  t.equal(list.check({ pageSize: 100, historyLength: 0, status: 'TASK_STATE_WORKING', statusTimestampAfter: '2025-11-09T10:30:00Z' }).ok, true)
  t.equal(list.check({ pageSize: 0 }).ok, false)
  t.equal(list.check({ pageSize: 101 }).ok, false)
  t.equal(list.check({ historyLength: -1 }).ok, false)
  t.equal(list.check({ status: 'working' }).ok, false)
  t.equal(list.check({ statusTimestampAfter: 'yesterday' }).ok, false)
})

t.test('StreamResponse is a oneof of exactly one payload', async t => {
  const event = compile(StreamResponse)
  const status = { taskId: 't', contextId: 'c', status: { state: 'TASK_STATE_WORKING' } }
  t.equal(event.check({ statusUpdate: status }).ok, true)
  t.equal(event.check({}).ok, false)
  t.equal(event.check({ statusUpdate: status, task: { id: 't', status: status.status } }).ok, false)
})

t.test('agent card: security schemes are a oneof; skills need tags', async t => {
  const card = compile(AgentCardInput)
  const base = {
    name: 'a', description: '', version: '1', capabilities: {}, defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
    skills: [{ id: 's', name: 'S', description: '', tags: ['t'] }]
  }
  t.equal(card.check({ ...base, securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } } } }).ok, true)
  t.same(card.check({ ...base, securitySchemes: { both: { httpAuthSecurityScheme: { scheme: 'Bearer' }, mtlsSecurityScheme: {} } } }), {
    ok: false,
    violations: [{ field: 'securitySchemes.both', description: 'must have exactly one of apiKeySecurityScheme, httpAuthSecurityScheme, oauth2SecurityScheme, openIdConnectSecurityScheme, mtlsSecurityScheme' }]
  })
  t.same(card.check({ ...base, skills: [{ id: 's', name: 'S', description: '', tags: [] }] }), {
    ok: false,
    violations: [{ field: 'skills[0].tags', description: 'must not have fewer than 1 items' }]
  })
})
