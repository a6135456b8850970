/**
 * @module Child process: the simulator's OpenAI-compatible HTTP endpoint on loopback, delays at zero,
 * for the peer benchmark. `node --import tsx bench/support/sim-server.ts` prints `{"port":N}` when ready.
 *
 * Every request is tokenized afresh, as a real engine's is: the simulator's memo of its last few long
 * texts would otherwise answer a repeated prompt (the same body sent again, as every target but the
 * guard sends it) without tokenizing it, while the guard's prompt, new each request by its canary, is
 * tokenized in full — at 32k tokens about 5 ms of the simulator's work that showed as the guard's.
 */
import { SimEngine } from '../../sim/engine'
import { simFetchHandler } from '../../sim/http'
import { forgetLongTexts } from '../../sim/tokenizer'
import { serve } from './http'

const engine = new SimEngine({
  prefillTokensPerSecond: Number.POSITIVE_INFINITY,
  decodeTokensPerSecond: Number.POSITIVE_INFINITY,
})
const handle = simFetchHandler(engine)
const served = await serve((request) => {
  forgetLongTexts()
  return handle(request)
})
console.log(JSON.stringify({ port: served.port }))
