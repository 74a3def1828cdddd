// RFC 8785 (JCS) canonicalization: the RFC's own samples (§3.2.2 to §3.2.4, Appendix B),
// string escaping, key order by UTF-16 code units, and the inputs the RFC says must fail.
import t from 'tap'
import { canonicalize } from '../lib/card/jcs.js'

t.test('the RFC 8785 §3.2.2 sample gives the §3.2.3 text and the §3.2.4 UTF-8 bytes', async t => {
  const input = JSON.parse(String.raw`{
    "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
    "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
    "literals": [null, true, false]
  }`)
  const text = canonicalize(input)
  t.equal(text, String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`)
  t.equal(Buffer.from(text, 'utf8').toString('hex').match(/../g)?.join(' '), [
    '7b 22 6c 69 74 65 72 61 6c 73 22 3a 5b 6e 75 6c 6c 2c 74 72',
    '75 65 2c 66 61 6c 73 65 5d 2c 22 6e 75 6d 62 65 72 73 22 3a',
    '5b 33 33 33 33 33 33 33 33 33 2e 33 33 33 33 33 33 33 2c 31',
    '65 2b 33 30 2c 34 2e 35 2c 30 2e 30 30 32 2c 31 65 2d 32 37',
    '5d 2c 22 73 74 72 69 6e 67 22 3a 22 e2 82 ac 24 5c 75 30 30',
    '30 66 5c 6e 41 27 42 5c 22 5c 5c 5c 5c 5c 22 2f 22 7d'
  ].join(' '))
})

t.test('the RFC 8785 §3.2.3 sorting sample: keys ordered by UTF-16 code units', async t => {
  const input = JSON.parse(String.raw`{
    "\u20ac": "Euro Sign",
    "\r": "Carriage Return",
    "\ufb33": "Hebrew Letter Dalet With Dagesh",
    "1": "One",
    "\ud83d\ude00": "Emoji: Grinning Face",
    "\u0080": "Control",
    "\u00f6": "Latin Small Letter O With Diaeresis"
  }`)
  // Compared as text: the integer-like key "1" would move first in a parsed object.
  t.equal(canonicalize(input),
    '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
    '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}')
})

t.test('the RFC 8785 Appendix B number table', async t => {
  const table: Array<[string, string]> = [
    ['0000000000000000', '0'],
    ['8000000000000000', '0'],
    ['0000000000000001', '5e-324'],
    ['8000000000000001', '-5e-324'],
    ['7fefffffffffffff', '1.7976931348623157e+308'],
    ['ffefffffffffffff', '-1.7976931348623157e+308'],
    ['4340000000000000', '9007199254740992'],
    ['c340000000000000', '-9007199254740992'],
    ['4430000000000000', '295147905179352830000'],
    ['44b52d02c7e14af5', '9.999999999999997e+22'],
    ['44b52d02c7e14af6', '1e+23'],
    ['44b52d02c7e14af7', '1.0000000000000001e+23'],
    ['444b1ae4d6e2ef4e', '999999999999999700000'],
    ['444b1ae4d6e2ef4f', '999999999999999900000'],
    ['444b1ae4d6e2ef50', '1e+21'],
    ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
    ['3eb0c6f7a0b5ed8d', '0.000001'],
    ['41b3de4355555553', '333333333.3333332'],
    ['41b3de4355555554', '333333333.33333325'],
    ['41b3de4355555555', '333333333.3333333'],
    ['41b3de4355555556', '333333333.3333334'],
    ['41b3de4355555557', '333333333.33333343'],
    ['becbf647612f3696', '-0.0000033333333333333333'],
    ['43143ff3c1cb0959', '1424953923781206.2']
  ]
  for (const [bits, expected] of table) t.equal(canonicalize(Buffer.from(bits, 'hex').readDoubleBE(0)), expected, bits)
  t.throws(() => canonicalize(Buffer.from('7fffffffffffffff', 'hex').readDoubleBE(0)), { name: 'TypeError', message: 'JCS: $ is NaN, not a finite number' })
  t.throws(() => canonicalize(Buffer.from('7ff0000000000000', 'hex').readDoubleBE(0)), { name: 'TypeError', message: 'JCS: $ is Infinity, not a finite number' })
})

t.test('number edge cases around the exponent switches', async t => {
  t.equal(canonicalize([1e21, 1e20, 1e-7, 1e-6, 0.000001, -0, 333333333.3333333, 4.5, 100, -1.5e-10]),
    '[1e+21,100000000000000000000,1e-7,0.000001,0.000001,0,333333333.3333333,4.5,100,-1.5e-10]')
  t.throws(() => canonicalize({ a: [1, -Infinity] }), { name: 'TypeError', message: 'JCS: $.a[1] is -Infinity, not a finite number' })
})

t.test('strings: short escapes, other controls as lowercase \\u00xx, everything else as is', async t => {
  t.equal(canonicalize('\u0000\u0001\u001f\b\t\n\u000b\f\r"\\/\u007f\u0080\u2028\u2029€😀'),
    '"\\u0000\\u0001\\u001f\\b\\t\\n\\u000b\\f\\r\\"\\\\/\u007f\u0080\u2028\u2029€😀"')
  t.equal(canonicalize({ 'a\nb': 1 }), '{"a\\nb":1}', 'member names are escaped the same way')
})

t.test('lone surrogates are refused, in values and in member names', async t => {
  t.throws(() => canonicalize('x\ud800'), { name: 'TypeError', message: 'JCS: $ holds a lone surrogate' })
  t.throws(() => canonicalize(['\ude00\ud83d']), { name: 'TypeError', message: 'JCS: $[0] holds a lone surrogate' })
  t.throws(() => canonicalize({ '\udfff': true }), { name: 'TypeError', message: 'JCS: $.\udfff holds a lone surrogate' })
})

t.test('nesting: members sorted at every depth, array order kept, no whitespace', async t => {
  t.equal(canonicalize({ z: [{ b: 1, a: [3, 2, 1] }, 'x'], a: { d: false, c: null, B: {} }, m: [] }),
    '{"a":{"B":{},"c":null,"d":false},"m":[],"z":[{"a":[3,2,1],"b":1},"x"]}')
  t.equal(canonicalize(Object.assign(Object.create(null), { b: 2, a: 1 })), '{"a":1,"b":2}', 'null-prototype objects are plain')
})

t.test('undefined members are left out, as JSON.stringify leaves them out of what is served', async t => {
  const card = { name: 'x', documentationUrl: undefined, capabilities: { streaming: false, pushNotifications: undefined } }
  t.equal(canonicalize(card), '{"capabilities":{"streaming":false},"name":"x"}')
  t.equal(canonicalize(card), canonicalize(JSON.parse(JSON.stringify(card))))
})

t.test('values that are not JSON data throw a TypeError naming where they are', async t => {
  t.throws(() => canonicalize([1, undefined]), { name: 'TypeError', message: 'JCS: $[1] is undefined, not JSON data' })
  // eslint-disable-next-line no-sparse-arrays
  t.throws(() => canonicalize({ skills: [1, , 2] }), { name: 'TypeError', message: 'JCS: $.skills[1] is undefined, not JSON data' }, 'a hole is not skipped')
  t.throws(() => canonicalize(undefined), { name: 'TypeError', message: 'JCS: $ is undefined, not JSON data' })
  t.throws(() => canonicalize({ n: 1n }), { name: 'TypeError', message: 'JCS: $.n is bigint, not JSON data' })
  t.throws(() => canonicalize({ f: () => 1 }), { name: 'TypeError', message: 'JCS: $.f is function, not JSON data' })
  t.throws(() => canonicalize({ s: Symbol('s') }), { name: 'TypeError', message: 'JCS: $.s is symbol, not JSON data' })
  t.throws(() => canonicalize({ at: new Date(0) }), { name: 'TypeError', message: 'JCS: $.at is a Date object, not JSON data' })
  t.throws(() => canonicalize({ m: new Map() }), { name: 'TypeError', message: 'JCS: $.m is a Map object, not JSON data' })
  t.throws(() => canonicalize({ o: Object.create(Object.create(null)) }), { name: 'TypeError', message: 'JCS: $.o is a non-plain object, not JSON data' })
})
