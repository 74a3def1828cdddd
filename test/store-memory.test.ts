// The store contract against the in-memory stores.
import t from 'tap'
import { MemoryPushConfigStore, MemoryTaskStore } from '../lib/index.js'
import { storeContract } from './helpers/store-contract.js'

storeContract(t, {
  async open (options = {}) {
    return { taskStore: new MemoryTaskStore(options), pushConfigStore: new MemoryPushConfigStore(), close () {} }
  }
})
