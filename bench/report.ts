// The table: one row per target of issue 8 (and the figures it asks to be reported),
// built from the medians of the repetitions.
import type { Figure } from './harness/stats.js'

export interface Row {
  scenario: string
  ours: string
  peer: string
  ceiling: string
  ratio: string
  target: string
  verdict: 'PASS' | 'MISS' | '—'
}

type Figures = Partial<Record<string, Figure>>

const count = (value: number) => Math.round(value).toLocaleString('en-US')
const times = (value: number) => `${value.toFixed(2)}×`
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`
const verdict = (pass: boolean): Row['verdict'] => pass ? 'PASS' : 'MISS'

/** A target that is this project's figure over another server's: one row of the table, and one line of the ratios per repetition. */
interface RatioTarget {
  label: string
  scenario: string
  ours: string
  other: string
  /** The column the other server's figure goes in. */
  column: 'peer' | 'ceiling'
  target: string
  /** The ratio it must reach; none when the ratio is only reported. */
  atLeast?: number
}

const RATIO_TARGETS = {
  p1Peer: { label: 'P1 vs peer', scenario: 'P1 JSON-RPC SendMessage req/s, vs peer', ours: 'p1.ours.rps', other: 'p1.peer.rps', column: 'peer', target: '≥ 5×', atLeast: 5 },
  p1Ceiling: { label: 'P1 vs ceiling', scenario: 'P1 JSON-RPC SendMessage req/s, vs ceiling', ours: 'p1.ours.rps', other: 'p1.ceiling.rps', column: 'ceiling', target: '≥ 0.6×', atLeast: 0.6 },
  p2: { label: 'P2 vs ceiling', scenario: 'P2 WebSocket SendMessage round trips/s, 64 in flight', ours: 'p2.ours.rtps', other: 'p2.ceiling.rtps', column: 'ceiling', target: '≥ 0.5×', atLeast: 0.5 },
  rest: { label: 'REST vs peer', scenario: 'REST message:send req/s, vs peer', ours: 'rest.ours.rps', other: 'rest.peer.rps', column: 'peer', target: 'reported' }
} as const satisfies Record<string, RatioTarget>

/** A row for each target whose figures were measured (`--only` may have left some out). */
export function buildRows (figures: Figures, failures: Record<string, string>, chunks: { ours: readonly [number, number], peer: readonly [number, number] }, idleCounts: readonly [number, number]): Row[] {
  const m = (name: string) => figures[name]?.median
  const rows: Row[] = []
  const add = (names: string[], row: () => Row) => { if (names.every(name => m(name) !== undefined)) rows.push(row()) }
  const k = (n: number) => `${n / 1000}k`
  const [ourSmall, ourLarge] = chunks.ours
  const [peerSmall, peerLarge] = chunks.peer
  const [idleSmall, idleLarge] = idleCounts

  const ratioRow = (spec: RatioTarget) => add([spec.ours, spec.other], () => {
    const ratio = (m(spec.ours) as number) / (m(spec.other) as number)
    const other = count(m(spec.other) as number)
    return {
      scenario: spec.scenario,
      ours: count(m(spec.ours) as number),
      peer: spec.column === 'peer' ? other : '',
      ceiling: spec.column === 'ceiling' ? other : '',
      ratio: times(ratio),
      target: spec.target,
      verdict: spec.atLeast === undefined ? '—' : verdict(ratio >= spec.atLeast)
    }
  })
  /** What the bindings alone reach (servers/handler-stub.ts), against the same ceiling. */
  const bindingsAlone = (scenario: 'P1' | 'P2', stub: string, ceiling: string) => add([stub, ceiling], () => ({
    scenario: `${scenario} with the handler stubbed (the bindings alone), vs ceiling`,
    ours: count(m(stub) as number),
    peer: '',
    ceiling: count(m(ceiling) as number),
    ratio: times((m(stub) as number) / (m(ceiling) as number)),
    target: 'reported',
    verdict: '—'
  }))
  ratioRow(RATIO_TARGETS.p1Peer)
  ratioRow(RATIO_TARGETS.p1Ceiling)
  add(['p1.ours.rps', 'p1.floor.rps', 'p1.ceiling.rps'], () => {
    const floor = m('p1.floor.rps') as number
    const ratio = (m('p1.ours.rps') as number) / floor
    const ofCeiling = floor / (m('p1.ceiling.rps') as number)
    return { scenario: 'P1 JSON-RPC SendMessage req/s, vs floor (the answer alone)', ours: count(m('p1.ours.rps') as number), peer: '', ceiling: `${count(floor)} (${times(ofCeiling)} ceiling)`, ratio: times(ratio), target: 'reported', verdict: '—' }
  })
  bindingsAlone('P1', 'p1.stub.rps', 'p1.ceiling.rps')
  ratioRow(RATIO_TARGETS.p2)
  bindingsAlone('P2', 'p2.stub.rtps', 'p2.ceiling.rtps')
  const peerStream = () => m('p3.peer.ratio') === undefined
    ? ''
    : `SSE ${k(peerSmall)} ${seconds(m('p3.peer.small.ms') as number)}, ${k(peerLarge)} ${seconds(m('p3.peer.large.ms') as number)} (${(m('p3.peer.ratio') as number).toFixed(2)})`
  for (const [binding, label] of [['ws', 'WebSocket'], ['sse', 'JSON-RPC SSE']] as const) {
    if (failures[`p3.${binding}`] !== undefined) {
      rows.push({ scenario: `P3 ${label} stream of ${k(ourSmall)} and ${k(ourLarge)} chunks`, ours: 'failed (below)', peer: peerStream(), ceiling: '', ratio: '', target: '≤ 2.2', verdict: 'MISS' })
      continue
    }
    add([`p3.${binding}.ratio`], () => {
      const ratio = m(`p3.${binding}.ratio`) as number
      return {
        scenario: `P3 ${label} stream, time(${k(ourLarge)}) / time(${k(ourSmall)})`,
        ours: `${seconds(m(`p3.${binding}.small.ms`) as number)} / ${seconds(m(`p3.${binding}.large.ms`) as number)}`,
        peer: peerStream(),
        ceiling: '',
        ratio: ratio.toFixed(2),
        target: '≤ 2.2',
        verdict: verdict(ratio <= 2.2)
      }
    })
    add([`p3.${binding}.eventsPerSec`], () => {
      const rate = m(`p3.${binding}.eventsPerSec`) as number
      const peer = m('p3.peer.eventsPerSec')
      return {
        scenario: `P3 ${label} stream events/s (${k(ourLarge)} chunks)`,
        ours: count(rate),
        peer: peer === undefined ? '' : `${count(peer)} (SSE, ${k(peerLarge)})`,
        ceiling: '',
        ratio: peer === undefined ? '' : times(rate / peer),
        target: binding === 'ws' ? '≥ 50,000/s' : 'reported',
        verdict: binding === 'ws' ? verdict(rate >= 50_000) : '—'
      }
    })
  }
  for (const [size, label] of [['small', idleSmall], ['large', idleLarge]] as const) {
    add([`p4.ours.${size}.heap`], () => {
      const heap = m(`p4.ours.${size}.heap`) as number
      const ceiling = m(`p4.ceiling.${size}.heap`)
      return { scenario: `P4 heap per idle WebSocket, ${count(label)} held`, ours: kib(heap), peer: '', ceiling: ceiling === undefined ? '' : `${kib(ceiling)} (bare ws)`, ratio: ceiling === undefined ? '' : times(heap / ceiling), target: '≤ 32 KiB', verdict: verdict(heap <= 32 * 1024) }
    })
    add([`p4.ours.${size}.rss`], () => {
      const ceiling = m(`p4.ceiling.${size}.rss`)
      const rss = m(`p4.ours.${size}.rss`) as number
      return { scenario: `P4 RSS per idle WebSocket, ${count(label)} held`, ours: kib(rss), peer: '', ceiling: ceiling === undefined ? '' : `${kib(ceiling)} (bare ws)`, ratio: ceiling === undefined ? '' : times(rss / ceiling), target: 'reported', verdict: '—' }
    })
  }
  add(['p4.ours.getTaskP99'], () => ({
    scenario: `P4 GetTask p99 on a fresh connection, ${count(idleLarge)} held`, ours: `${(m('p4.ours.getTaskP99') as number).toFixed(2)} ms`, peer: '', ceiling: '', ratio: '', target: 'reported', verdict: '—'
  }))
  ratioRow(RATIO_TARGETS.rest)
  return rows
}

export interface PairedRatio {
  label: string
  /** This project's sample over the other server's, repetition by repetition. */
  ratios: number[]
}

/**
 * The ratio targets taken repetition by repetition. A repetition loads the servers in turn,
 * seconds apart, so a slower machine falls on both figures of a pair; across repetitions it
 * does not, and the table's ratio of medians can pair a sample taken on a slow minute with
 * one taken on a quiet one. Reported beside the table, not judged: the targets stay ratios
 * of medians.
 */
export function ratiosPerRepetition (figures: Figures): PairedRatio[] {
  const paired: PairedRatio[] = []
  for (const { label, ours, other } of Object.values(RATIO_TARGETS)) {
    const mine = figures[ours]?.samples
    const theirs = figures[other]?.samples
    if (mine === undefined || theirs === undefined || mine.length < 2 || mine.length !== theirs.length) continue
    paired.push({ label, ratios: mine.map((value, at) => value / (theirs[at] as number)) })
  }
  return paired
}

const COLUMNS: Array<[keyof Row, string]> = [
  ['scenario', 'scenario'], ['ours', 'this project'], ['peer', 'peer (@a2a-js/sdk)'], ['ceiling', 'ceiling'],
  ['ratio', 'ratio'], ['target', 'target'], ['verdict', 'PASS/MISS']
]

/** A Markdown table, padded so that it reads as well in a terminal as in the README. */
export function renderTable (rows: Row[]): string {
  const widths = COLUMNS.map(([key, title]) => Math.max(title.length, ...rows.map(row => row[key].length)))
  const line = (cells: string[]) => `| ${cells.map((cell, i) => cell.padEnd(widths[i] as number)).join(' | ')} |`
  return [
    line(COLUMNS.map(([, title]) => title)),
    `|${widths.map(width => '-'.repeat(width + 2)).join('|')}|`,
    ...rows.map(row => line(COLUMNS.map(([key]) => row[key])))
  ].join('\n')
}
