// The status and artifact events a turn publishes are made by constructors (lib/handler/
// update-events.ts, for the collector's sake): each must be the wire object a literal would be,
// own keys and their order included, with `append` and `lastChunk` present only when true.
import t from 'tap'
import { artifactUpdateEvent, statusUpdateEvent } from '../lib/handler/update-events.js'
import { StreamResponse } from '../lib/index.js'
import { compileSerializer } from '../lib/schema/serialize.js'
import { compile } from '../lib/schema/validate.js'

const artifact = { artifactId: 'a', parts: [{ text: 'chunk 1' }] }
const status = { state: 'TASK_STATE_WORKING' as const, timestamp: '2026-12-05T19:00:00.000Z' }
const serialize = compileSerializer(StreamResponse)
const validate = compile(StreamResponse)

t.test('an artifact event: the own keys of its literal, append and lastChunk only when true', async t => {
  const cases: Array<[boolean, boolean, object]> = [
    [false, false, { taskId: 't', contextId: 'c', artifact }],
    [true, false, { taskId: 't', contextId: 'c', artifact, append: true }],
    [false, true, { taskId: 't', contextId: 'c', artifact, lastChunk: true }],
    [true, true, { taskId: 't', contextId: 'c', artifact, append: true, lastChunk: true }]
  ]
  for (const [append, lastChunk, update] of cases) {
    const event = artifactUpdateEvent('t', 'c', artifact, append, lastChunk)
    const literal = { artifactUpdate: update }
    t.strictSame(Object.keys(event), ['artifactUpdate'])
    t.strictSame(Object.keys(event.artifactUpdate ?? {}), Object.keys(update), `append ${append}, lastChunk ${lastChunk}: the keys, in order`)
    t.equal(event.artifactUpdate?.artifact, artifact, 'the artifact itself, not a copy')
    t.equal(JSON.stringify(event), JSON.stringify(literal))
    t.equal(serialize(event), JSON.stringify(literal), 'the compiled serialiser writes the same')
    t.ok(validate.check(event).ok, 'a valid StreamResponse')
  }
})

t.test('a status event: the own keys of its literal', async t => {
  const event = statusUpdateEvent('t', 'c', status)
  t.strictSame(Object.keys(event), ['statusUpdate'])
  t.strictSame(Object.keys(event.statusUpdate ?? {}), ['taskId', 'contextId', 'status'])
  t.equal(event.statusUpdate?.status, status)
  t.equal(JSON.stringify(event), JSON.stringify({ statusUpdate: { taskId: 't', contextId: 'c', status } }))
  t.equal(serialize(event), JSON.stringify({ statusUpdate: { taskId: 't', contextId: 'c', status } }))
  t.ok(validate.check(event).ok, 'a valid StreamResponse')
})
