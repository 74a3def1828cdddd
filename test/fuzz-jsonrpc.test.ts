// Issue 9 §1: fuzzed JSON-RPC bodies over HTTP against a live server. Each case must get
// exactly the answer the spec requires, and the next valid call must still be served.
// `npm run fuzz -- --runs N` runs the same property as long as wanted.
import t from 'tap'
import { fuzzLiveServer, jsonRpcFuzzer, rpcFrames } from './helpers/fuzz.js'

fuzzLiveServer(t, 'fuzzed JSON-RPC bodies over HTTP', jsonRpcFuzzer, rpcFrames)
