/**
 * @module The overhead bench's Worker: one in-isolate simulator with zero delays, reached directly
 * (`/direct`) or through `guardAi` (`/guarded`), so the only difference between the two routes is the
 * guard. Prompts are built in the isolate (cached per size), so request bodies stay tiny and both routes
 * pay the same transport. With `prefill=1` both routes go to a second simulator that prefills at the
 * profile's physical bound (the fastest honest engine) and each request's prompt opens with its own
 * round line (`round=N`), so no prefix cache serves it: what the guard adds when the engine really
 * reads the prompt. `/warm?chars=N` loads the simulator's tokenizer (Qwen3, 0.3–0.5 s) and encodes
 * that prompt once before any timing, so no timed request pays the load.
 */
import { SimEngine } from '../../sim/engine'
import { loadTokenizer } from '../../sim/tokenizer'
import { guardAi } from '../../src'
import { english } from '../texts'
import {
  chat,
  freshPrompt,
  MODEL,
  PHYSICAL_PREFILL_TOKENS_PER_SECOND,
  withLookalikeDirective,
} from './prompts'

interface Env {
  GUARD_SECRET: string
}

const engine = new SimEngine({
  prefillTokensPerSecond: Number.POSITIVE_INFINITY,
  decodeTokensPerSecond: Number.POSITIVE_INFINITY,
})
const prefilling = new SimEngine({
  prefillTokensPerSecond: PHYSICAL_PREFILL_TOKENS_PER_SECOND,
  decodeTokensPerSecond: Number.POSITIVE_INFINITY,
})
// The account is the Worker's, shared by both routes (as the real binding's would be).
const upstreams = { instant: engine.binding('worker'), prefill: prefilling.binding('worker') }
const guards = new Map<string, ReturnType<typeof guardAi>>()
const prompts = new Map<number, string>()

function prompt(chars: number): string {
  let text = prompts.get(chars)
  if (text === undefined) {
    text = english(7, chars)
    prompts.set(chars, text)
  }
  return text
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url)
    const chars = Number(url.searchParams.get('chars') ?? '4000')
    const stream = url.searchParams.get('stream') === '1'
    if (url.pathname === '/warm') {
      const tokens = (await loadTokenizer()).encode(prompt(chars)).length
      return Response.json({ tokens })
    }
    const round = url.searchParams.get('round')
    const text = round === null ? prompt(chars) : freshPrompt(prompt(chars), round)
    const inputs = chat(text, stream ? { stream: true } : {})
    const which = url.searchParams.get('prefill') === '1' ? 'prefill' : 'instant'
    const upstream = upstreams[which]
    if (url.pathname !== '/guarded' && url.pathname !== '/direct') {
      return new Response('not found', { status: 404 })
    }
    try {
      let guarded = guards.get(which)
      if (!guarded) {
        guarded = guardAi(upstream, { secret: env.GUARD_SECRET, tenant: 'bench' })
        guards.set(which, guarded)
      }
      // Direct requests carry the same directive shape the guard appends (see withLookalikeDirective).
      const out =
        url.pathname === '/guarded'
          ? await guarded.run(MODEL, inputs)
          : await upstream.run(MODEL, withLookalikeDirective(inputs))
      if (out instanceof ReadableStream) {
        return new Response(out as ReadableStream<Uint8Array>, {
          headers: { 'content-type': 'text/event-stream' },
        })
      }
      return Response.json(out)
    } catch (error) {
      const status =
        typeof error === 'object' && error && 'status' in error ? Number(error.status) : 500
      return Response.json({ error: String(error) }, { status: status || 500 })
    }
  },
} satisfies ExportedHandler<Env>
