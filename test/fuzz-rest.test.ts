// Issue 9 §1: fuzzed HTTP+JSON requests (bodies, paths, query strings) against a live server. Each case must get
// exactly the answer the spec requires, and the next valid call must still be served.
// `npm run fuzz -- --runs N` runs the same property as long as wanted.
import t from 'tap'
import { fuzzLiveServer, restFuzzer, restCases } from './helpers/fuzz.js'

fuzzLiveServer(t, 'fuzzed HTTP+JSON requests (bodies, paths, query strings)', restFuzzer, restCases)
