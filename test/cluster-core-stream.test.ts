// Streams across instances see each event once (issue 11), with the race forced: B has
// subscribed to the bus, and before it reads the snapshot A stores and publishes two more
// chunks, which reach B's bus listener first. The snapshot holds them, so B drops them by
// their versions: SubscribeToTask on B, and a SendStreamingMessage resent to B, get the
// snapshot, then only what A stored after it.
import t, { type Test } from 'tap'
import type { AgentExecutor, StreamResponse, TaskStore } from '../lib/index.js'
import { topicOf } from '../lib/bus/topic.js'
import { overrideStore, testCluster } from './helpers/cluster-core.js'
import { eventually, stream, userMessage } from './helpers/server.js'

interface Gate {
  opened: Promise<void>
  open: () => void
}

function gate (): Gate {
  let open = () => {}
  const opened = new Promise<void>(resolve => { open = resolve })
  return { opened, open }
}

const chunk = (n: number) => ({ artifactId: 'stream', parts: [{ text: `chunk ${n}` }] })

/** The gates of the one task running at a time: A waits on `more` after chunk 1, on `last` after chunk 3. */
let run = { started: gate(), taskId: '', more: gate(), last: gate() }

const gated: AgentExecutor = {
  async execute (context, events) {
    const current = run
    await events.working()
    await events.artifact(chunk(1))
    current.taskId = context.taskId
    current.started.open()
    await current.more.opened
    await events.artifact(chunk(2), { append: true })
    await events.artifact(chunk(3), { append: true })
    await current.last.opened
    await events.artifact(chunk(4), { append: true, lastChunk: true })
    await events.completed()
  }
}

const cluster = await testCluster(t)
if (cluster !== undefined) {
  const a = await cluster.start({ options: { executor: gated } })
  /**
   * B's snapshot read, held up: A goes on to store and publish chunks 2 and 3, and the read
   * waits until B's bus delivered chunk 3 (to the stream's listener first: it subscribed
   * earlier). Once read, A finishes.
   */
  const raceSnapshot = (store: TaskStore) => overrideStore(store, {
    async getVersioned (id, scope) {
      const topic = topicOf(scope.tenant, id)
      let seenChunk3 = false
      const unsubscribe = b.fastify.a2a.bus.subscribe(topic, (event) => {
        if (event.artifactUpdate?.artifact.parts[0]?.text === 'chunk 3') seenChunk3 = true
      })
      run.more.open()
      await eventually(() => seenChunk3)
      unsubscribe()
      const snapshot = await store.getVersioned?.(id, scope)
      run.last.open()
      return snapshot
    }
  })
  const b = await cluster.start({ options: { executor: gated }, wrapTaskStore: raceSnapshot })

  const results = (events: Array<{ data: any }>): StreamResponse[] => events.map(event => event.data.result)
  const chunksIn = (event: StreamResponse): string[] =>
    (event.task?.artifacts?.[0] ?? event.artifactUpdate?.artifact)?.parts.map(part => part.text as string) ?? []

  /** B's stream against A's: the snapshot with chunks 1 to 3, then A's last two events, nothing twice. */
  function checkExactlyOnce (t: Test, onB: StreamResponse[], onA: StreamResponse[]): void {
    const [snapshot, ...after] = onB
    t.equal(snapshot?.task?.id, run.taskId, 'the snapshot first')
    t.same(chunksIn(snapshot as StreamResponse), ['chunk 1', 'chunk 2', 'chunk 3'], 'it holds the chunks A stored before the read')
    t.same(after, onA.slice(-2), 'then A\'s events after the snapshot, event for event: chunk 4, COMPLETED')
    t.same(onB.flatMap(chunksIn), ['chunk 1', 'chunk 2', 'chunk 3', 'chunk 4'], 'every chunk once')
  }

  t.beforeEach(() => { run = { started: gate(), taskId: '', more: gate(), last: gate() } })

  t.test('SubscribeToTask on B: the snapshot, then only the events after it', async t => {
    const fromA = stream(a.endpoint, 'SendStreamingMessage', { message: userMessage('gated') })
    await run.started.opened
    const onB = results((await stream(b.endpoint, 'SubscribeToTask', { id: run.taskId })).events)
    const onA = results((await fromA).events)
    t.same(onA.flatMap(chunksIn), ['chunk 1', 'chunk 2', 'chunk 3', 'chunk 4'])
    checkExactlyOnce(t, onB, onA)
  })

  t.test('SendStreamingMessage resent to B: the snapshot, then only the events after it', async t => {
    const message = userMessage('gated')
    const fromA = stream(a.endpoint, 'SendStreamingMessage', { message })
    await run.started.opened
    const onB = results((await stream(b.endpoint, 'SendStreamingMessage', { message })).events)
    checkExactlyOnce(t, onB, results((await fromA).events))
  })
}
