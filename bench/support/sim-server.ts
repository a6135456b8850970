/**
 * @module Child process: the simulator's OpenAI-compatible HTTP endpoint on loopback, delays at zero,
 * for the peer benchmark. `node --import tsx bench/support/sim-server.ts` prints `{"port":N}` when ready.
 */
import { SimEngine } from '../../sim/engine'
import { simFetchHandler } from '../../sim/http'
import { serve } from './http'

const engine = new SimEngine({
  prefillTokensPerSecond: Number.POSITIVE_INFINITY,
  decodeTokensPerSecond: Number.POSITIVE_INFINITY,
})
const served = await serve(simFetchHandler(engine))
console.log(JSON.stringify({ port: served.port }))
