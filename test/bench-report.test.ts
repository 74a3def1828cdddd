// The bench's table (bench/report.ts): the verdicts at each target's bound, and the ratios
// taken repetition by repetition beside it.
import { test } from 'tap'
import { buildRows, ratiosPerRepetition } from '../bench/report.js'
import { figure } from '../bench/harness/stats.js'

const chunks = { ours: [10_000, 20_000], peer: [1_000, 2_000] } as const
const idle = [1_000, 10_000] as const

test('P1 against the ceiling passes at 0.6× of the medians and misses below it', async (t) => {
  const at = (ours: number[], ceiling: number[]) => buildRows({ 'p1.ours.rps': figure(ours), 'p1.ceiling.rps': figure(ceiling) }, {}, chunks, idle)
  t.same(at([600, 590, 610], [1000, 990, 1010]), [{
    scenario: 'P1 JSON-RPC SendMessage req/s, vs ceiling', ours: '600', peer: '', ceiling: '1,000', ratio: '0.60×', target: '≥ 0.6×', verdict: 'PASS'
  }])
  t.equal(at([599, 590, 610], [1000, 990, 1010])[0]?.verdict, 'MISS')
})

test('a row is left out when one of its figures was not measured (--only)', async (t) => {
  t.same(buildRows({ 'p1.ours.rps': figure([600]) }, {}, chunks, idle), [])
})

test('the ratio targets are paired repetition by repetition, in the order the samples were taken', async (t) => {
  const figures = {
    'p1.ours.rps': figure([500, 600, 900]),
    'p1.ceiling.rps': figure([1000, 800, 1000]),
    'p1.peer.rps': figure([100, 100, 150]),
    'p2.ours.rtps': figure([70, 60, 50]),
    'p2.ceiling.rtps': figure([100, 100, 100])
  }
  t.same(ratiosPerRepetition(figures), [
    { label: 'P1 vs peer', ratios: [5, 6, 6] },
    { label: 'P1 vs ceiling', ratios: [0.5, 0.75, 0.9] },
    { label: 'P2 vs ceiling', ratios: [0.7, 0.6, 0.5] }
  ])
  // The table's ratio of medians pairs 600 with 1,000, samples of different repetitions.
  t.equal(buildRows(figures, {}, chunks, idle).find(row => row.scenario.endsWith('vs ceiling') && row.scenario.startsWith('P1'))?.ratio, '0.60×')
})

test('no pairing for a single repetition (quick) or for figures of unequal length', async (t) => {
  t.same(ratiosPerRepetition({ 'p1.ours.rps': figure([500]), 'p1.ceiling.rps': figure([1000]) }), [])
  t.same(ratiosPerRepetition({ 'p1.ours.rps': figure([500, 600]), 'p1.ceiling.rps': figure([1000, 800, 900]) }), [])
})
