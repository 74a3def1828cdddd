const count = (value) => Math.round(value).toLocaleString('en-US');
const times = (value) => `${value.toFixed(2)}×`;
const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;
const seconds = (ms) => `${(ms / 1000).toFixed(2)} s`;
const verdict = (pass) => pass ? 'PASS' : 'MISS';
/** A row for each target whose figures were measured (`--only` may have left some out). */
export function buildRows(figures, failures, chunks, idleCounts) {
    const m = (name) => figures[name]?.median;
    const rows = [];
    const add = (names, row) => { if (names.every(name => m(name) !== undefined))
        rows.push(row()); };
    const k = (n) => `${n / 1000}k`;
    const [ourSmall, ourLarge] = chunks.ours;
    const [peerSmall, peerLarge] = chunks.peer;
    const [idleSmall, idleLarge] = idleCounts;
    add(['p1.ours.rps', 'p1.peer.rps'], () => {
        const ratio = m('p1.ours.rps') / m('p1.peer.rps');
        return { scenario: 'P1 JSON-RPC SendMessage req/s, vs peer', ours: count(m('p1.ours.rps')), peer: count(m('p1.peer.rps')), ceiling: '', ratio: times(ratio), target: '≥ 5×', verdict: verdict(ratio >= 5) };
    });
    add(['p1.ours.rps', 'p1.ceiling.rps'], () => {
        const ratio = m('p1.ours.rps') / m('p1.ceiling.rps');
        return { scenario: 'P1 JSON-RPC SendMessage req/s, vs ceiling', ours: count(m('p1.ours.rps')), peer: '', ceiling: count(m('p1.ceiling.rps')), ratio: times(ratio), target: '≥ 0.6×', verdict: verdict(ratio >= 0.6) };
    });
    add(['p2.ours.rtps', 'p2.ceiling.rtps'], () => {
        const ratio = m('p2.ours.rtps') / m('p2.ceiling.rtps');
        return { scenario: 'P2 WebSocket SendMessage round trips/s, 64 in flight', ours: count(m('p2.ours.rtps')), peer: '', ceiling: count(m('p2.ceiling.rtps')), ratio: times(ratio), target: '≥ 0.5×', verdict: verdict(ratio >= 0.5) };
    });
    const peerStream = () => m('p3.peer.ratio') === undefined
        ? ''
        : `SSE ${k(peerSmall)} ${seconds(m('p3.peer.small.ms'))}, ${k(peerLarge)} ${seconds(m('p3.peer.large.ms'))} (${m('p3.peer.ratio').toFixed(2)})`;
    for (const [binding, label] of [['ws', 'WebSocket'], ['sse', 'JSON-RPC SSE']]) {
        if (failures[`p3.${binding}`] !== undefined) {
            rows.push({ scenario: `P3 ${label} stream of ${k(ourSmall)} and ${k(ourLarge)} chunks`, ours: 'failed (below)', peer: peerStream(), ceiling: '', ratio: '', target: '≤ 2.2', verdict: 'MISS' });
            continue;
        }
        add([`p3.${binding}.ratio`], () => {
            const ratio = m(`p3.${binding}.ratio`);
            return {
                scenario: `P3 ${label} stream, time(${k(ourLarge)}) / time(${k(ourSmall)})`,
                ours: `${seconds(m(`p3.${binding}.small.ms`))} / ${seconds(m(`p3.${binding}.large.ms`))}`,
                peer: peerStream(),
                ceiling: '',
                ratio: ratio.toFixed(2),
                target: '≤ 2.2',
                verdict: verdict(ratio <= 2.2)
            };
        });
        add([`p3.${binding}.eventsPerSec`], () => {
            const rate = m(`p3.${binding}.eventsPerSec`);
            const peer = m('p3.peer.eventsPerSec');
            return {
                scenario: `P3 ${label} stream events/s (${k(ourLarge)} chunks)`,
                ours: count(rate),
                peer: peer === undefined ? '' : `${count(peer)} (SSE, ${k(peerLarge)})`,
                ceiling: '',
                ratio: peer === undefined ? '' : times(rate / peer),
                target: binding === 'ws' ? '≥ 50,000/s' : 'reported',
                verdict: binding === 'ws' ? verdict(rate >= 50_000) : '—'
            };
        });
    }
    for (const [size, label] of [['small', idleSmall], ['large', idleLarge]]) {
        add([`p4.ours.${size}.heap`], () => {
            const heap = m(`p4.ours.${size}.heap`);
            const ceiling = m(`p4.ceiling.${size}.heap`);
            return { scenario: `P4 heap per idle WebSocket, ${count(label)} held`, ours: kib(heap), peer: '', ceiling: ceiling === undefined ? '' : `${kib(ceiling)} (bare ws)`, ratio: ceiling === undefined ? '' : times(heap / ceiling), target: '≤ 32 KiB', verdict: verdict(heap <= 32 * 1024) };
        });
        add([`p4.ours.${size}.rss`], () => {
            const ceiling = m(`p4.ceiling.${size}.rss`);
            const rss = m(`p4.ours.${size}.rss`);
            return { scenario: `P4 RSS per idle WebSocket, ${count(label)} held`, ours: kib(rss), peer: '', ceiling: ceiling === undefined ? '' : `${kib(ceiling)} (bare ws)`, ratio: ceiling === undefined ? '' : times(rss / ceiling), target: 'reported', verdict: '—' };
        });
    }
    add(['p4.ours.getTaskP99'], () => ({
        scenario: `P4 GetTask p99 on a fresh connection, ${count(idleLarge)} held`, ours: `${m('p4.ours.getTaskP99').toFixed(2)} ms`, peer: '', ceiling: '', ratio: '', target: 'reported', verdict: '—'
    }));
    add(['rest.ours.rps', 'rest.peer.rps'], () => {
        const ratio = m('rest.ours.rps') / m('rest.peer.rps');
        return { scenario: 'REST message:send req/s, vs peer', ours: count(m('rest.ours.rps')), peer: count(m('rest.peer.rps')), ceiling: '', ratio: times(ratio), target: 'reported', verdict: '—' };
    });
    return rows;
}
const COLUMNS = [
    ['scenario', 'scenario'], ['ours', 'this project'], ['peer', 'peer (@a2a-js/sdk)'], ['ceiling', 'ceiling'],
    ['ratio', 'ratio'], ['target', 'target'], ['verdict', 'PASS/MISS']
];
/** A Markdown table, padded so that it reads as well in a terminal as in the README. */
export function renderTable(rows) {
    const widths = COLUMNS.map(([key, title]) => Math.max(title.length, ...rows.map(row => row[key].length)));
    const line = (cells) => `| ${cells.map((cell, i) => cell.padEnd(widths[i])).join(' | ')} |`;
    return [
        line(COLUMNS.map(([, title]) => title)),
        `|${widths.map(width => '-'.repeat(width + 2)).join('|')}|`,
        ...rows.map(row => line(COLUMNS.map(([key]) => row[key])))
    ].join('\n');
}
//# sourceMappingURL=report.js.map