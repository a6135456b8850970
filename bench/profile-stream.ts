/**
 * @module `node --import tsx --cpu-prof bench/profile-stream.ts [long|1k] [rounds]`: the guard's stream
 * path on a recorded answer, many times over, for a CPU profile of where each event's time goes (Node).
 */
import { SimEngine } from '../sim/engine'
import { guardAi } from '../src'
import type { AiRunner } from '../src/core/call/upstream'
import { importCanaryKey, mintCanary } from '../src/core/canary'
import { BENCH_SECRET, MODEL } from './support/prompts'
import { recordStream, replay } from './support/streams'
import { english } from './texts'

const which: string = process.argv[2] ?? 'long'
const rounds = Number(process.argv[3] ?? (which === 'long' ? 40 : 400))
const tokens = which === 'long' ? 24_000 : 1_000

/** The 1k-token whole answer over the simulator with its delays at zero (as the overhead suite). */
async function whole(): Promise<void> {
  const engine = new SimEngine({
    prefillTokensPerSecond: Number.POSITIVE_INFINITY,
    decodeTokensPerSecond: Number.POSITIVE_INFINITY,
  })
  const guarded = guardAi(engine.binding('worker'), { secret: BENCH_SECRET, tenant: 'bench' })
  const direct = engine.binding('worker')
  const prompt = { messages: [{ role: 'user', content: english(7, 4_100) }] }
  const time = async (ai: typeof direct) => {
    const start = performance.now()
    for (let i = 0; i < rounds; i++) await ai.run(MODEL, prompt)
    return (performance.now() - start) / rounds
  }
  await time(guarded)
  const d = await time(direct)
  const g = await time(guarded)
  console.log(
    `whole 1k: direct ${d.toFixed(3)} ms, guarded ${g.toFixed(3)} ms, added ${(g - d).toFixed(3)} ms`,
  )
}

async function main(): Promise<void> {
  if (which === 'whole') return whole()
  const canary = await mintCanary(await importCanaryKey(BENCH_SECRET), {
    requestId: 'p/1',
    tenant: 'bench',
  })
  const rec = recordStream({ echo: canary, reasoningTokens: tokens / 2, contentTokens: tokens / 2 })
  const upstream: AiRunner = { run: async () => replay(rec) }
  const guarded = guardAi(upstream, {
    secret: BENCH_SECRET,
    tenant: 'bench',
    hooks: { requestId: () => 'p' },
  })
  const prompt = {
    messages: [{ role: 'user', content: 'Explain the quarterly ledger.' }],
    stream: true,
  }
  const start = performance.now()
  const cpu0 = process.cpuUsage()
  let bytes = 0
  for (let i = 0; i < rounds; i++) {
    const out = (await guarded.run(MODEL, prompt)) as ReadableStream<Uint8Array>
    const reader = out.getReader()
    while (true) {
      const { done, value } = await reader.read()
      if (done) break
      bytes += value.length
    }
  }
  const took = performance.now() - start
  const used = process.cpuUsage(cpu0)
  const cpu = (used.user + used.system) / 1000
  console.log(
    `  CPU ${(cpu / rounds).toFixed(2)} ms per stream, ${((cpu * 1000) / (rounds * rec.events)).toFixed(2)} µs per event`,
  )
  console.log(
    `${which}: ${rounds} streams, ${rec.events} events each, ${(took / rounds).toFixed(2)} ms per stream, ${((took * 1000) / (rounds * rec.events)).toFixed(2)} µs per event, ${bytes} bytes`,
  )
}

main()
