// Streams across instances (issue 11), over the Redis bus and over the PostgreSQL
// LISTEN/NOTIFY bus: `stream 200` runs on A; SubscribeToTask on B, from the start and
// mid-way, gets the task snapshot first, then A's events from that point on, event for
// event, none the snapshot already holds; a client whose connection to A drops resubscribes
// on B and continues from the snapshot. (test/cluster-core-stream.test.ts forces the race.)
import t from 'tap'
import { startCluster } from './helpers/cluster.js'
import { userMessage } from './helpers/server.js'
import { connect, watchFrames } from './helpers/ws.js'

const CHUNKS = 200

/** The texts of the `stream` artifact's chunks a snapshot already holds. */
const chunksIn = (task: any): string[] => task.artifacts?.find((artifact: any) => artifact.artifactId === 'stream')?.parts.map((part: any) => part.text) ?? []
const chunkEvents = (frames: any[]): string[] => frames.flatMap(frame => frame.result.artifactUpdate?.artifact.parts.map((part: any) => part.text) ?? [])
const EVERY_CHUNK = Array.from({ length: CHUNKS }, (_, i) => `chunk ${i + 1}`)
/** The chunks, each once: what a subscriber has, repeats aside. */
const distinct = (chunks: string[]): string[] => [...new Set(chunks)]

for (const bus of ['redis', 'postgres'] as const) {
  t.test(`${bus} bus`, async t => {
    const [a, b] = await startCluster(t, { bus })
    if (a === undefined || b === undefined) return

    t.test('subscribers on B, from the start and mid-way, see A\'s stream event for event', async t => {
      const onA = await connect(a.wsUrl)
      const onB = await connect(b.wsUrl)
      t.teardown(() => { onA.close(); onB.close() })
      const watch = watchFrames(onA, 'a')
      const fromA = onA.stream('SendStreamingMessage', { message: userMessage(`stream ${CHUNKS}`) }, 'a')
      await watch.reached(1)
      const id = watch.frames[0].result.task.id
      const fromStart = onB.stream('SubscribeToTask', { id }, 'b-start')
      // Frame 100 of A: the task, working, then chunks 1 to 98, each stored before it was sent.
      await watch.reached(100)
      const midway = onB.stream('SubscribeToTask', { id }, 'b-mid')

      // A's frames after its first (the task): the events every subscriber shares.
      const eventsOfA = (await fromA).slice(1)
      t.same(chunkEvents(eventsOfA), EVERY_CHUNK)
      for (const [name, subscription] of [['from the start', fromStart], ['mid-way', midway]] as const) {
        const [snapshot, ...events] = await subscription
        t.equal(snapshot.result.task.id, id, `${name}: the snapshot comes first`)
        t.same(events, eventsOfA.slice(eventsOfA.length - events.length).map(frame => ({ ...frame, id: snapshot.id })), `${name}: then A's events, event for event`)
        const chunks = [...chunksIn(snapshot.result.task), ...chunkEvents(events)]
        t.same(distinct(chunks), EVERY_CHUNK, `${name}: the snapshot's chunks, then the events', miss none and keep the order`)
        t.same(chunks, EVERY_CHUNK, `${name}: and repeat none`)
        t.same(events.at(-1).result, { status: 'stream_complete' })
        t.equal(events.at(-2).result.statusUpdate.status.state, 'TASK_STATE_COMPLETED')
      }
      t.ok(chunksIn((await midway)[0].result.task).length >= 98, 'the mid-way snapshot holds what A had sent')
    })

    t.test('a client whose connection to A drops resubscribes on B and continues from the snapshot', async t => {
      const onA = await connect(a.wsUrl)
      const watch = watchFrames(onA, 'a')
      // Only sent: its connection is cut mid-way, so the stream never ends here.
      onA.send({ jsonrpc: '2.0', id: 'a', method: 'SendStreamingMessage', params: { message: userMessage(`stream ${CHUNKS}`) } })
      await watch.reached(50)
      onA.socket.terminate()
      const seenOnA = chunkEvents(watch.frames.slice(1))
      const id = watch.frames[0].result.task.id

      const onB = await connect(b.wsUrl)
      t.teardown(() => onB.close())
      const [snapshot, ...events] = await onB.stream('SubscribeToTask', { id })
      const snapshotChunks = chunksIn(snapshot.result.task)
      t.same(snapshotChunks.slice(0, seenOnA.length), seenOnA, 'the snapshot holds every chunk A had sent')
      const chunks = [...snapshotChunks, ...chunkEvents(events)]
      t.same(distinct(chunks), EVERY_CHUNK, 'then B sends the rest: none missing, in order')
      t.same(chunks, EVERY_CHUNK, 'and none twice')
      t.equal(events.at(-2).result.statusUpdate.status.state, 'TASK_STATE_COMPLETED')
      const task = (await onB.request('GetTask', { id })).result
      t.equal(task.status.state, 'TASK_STATE_COMPLETED')
      t.same(chunksIn(task), EVERY_CHUNK)
    })
  })
}
