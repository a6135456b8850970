/**
 * @module `node --import tsx bench/profile-workerd.ts [whole|stream] [requests] [out.cpuprofile]`: a
 * CPU profile of the guard Worker inside workerd (the peer bench's Worker over the simulator), taken
 * through Miniflare's inspector while requests are sent one at a time. With the inspector attached,
 * `console.log` costs milliseconds (the verdict line showed 3.7 ms a request); without it, silencing
 * the log changed the Worker's CPU per request by nothing measurable: read that line as an artifact.
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { convertV4MiniflareOptions, Miniflare } from 'miniflare'
import { defaultTokenizerOnly } from '../sim/bundle'
import { ROOT } from './lib'
import { PEER_KEY } from './support/peer-env'
import { startSimulator } from './support/peers'
import { BENCH_SECRET, MODEL } from './support/prompts'
import { bundleWorker } from './support/workerd'
import { english } from './texts'

const mode: string = process.argv[2] ?? 'whole'
const requests = Number(process.argv[3] ?? 300)
const out: string = process.argv[4] ?? `/tmp/workerd-${mode}.cpuprofile`
const INSPECTOR = 9300 + Math.floor(Math.random() * 500)

async function main(): Promise<void> {
  const sim = await startSimulator()
  const outfile = await bundleWorker('bench-peer-worker', {
    entryPoints: [join(ROOT, 'bench/support/peer-worker.ts')],
    plugins: [defaultTokenizerOnly('bench/profile-workerd.ts')],
  })
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      handleStructuredLogs: () => {},
      inspectorPort: INSPECTOR,
      workers: [
        {
          name: 'guard',
          modules: true,
          scriptPath: outfile,
          compatibilityDate: '2026-11-01',
          bindings: {
            SIM_URL: sim.url,
            GUARD_SECRET: BENCH_SECRET,
            TENANT_KEYS: JSON.stringify({ [PEER_KEY]: 'bench' }),
          },
        },
      ],
    }),
  )
  const url = (await mf.ready).href.replace(/\/$/, '')
  const body = JSON.stringify({
    model: MODEL,
    messages: [{ role: 'user', content: english(11, 4_100) }],
    ...(mode === 'stream' ? { stream: true } : {}),
  })
  const send = async () => {
    const r = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${PEER_KEY}` },
      body,
    })
    await r.arrayBuffer()
    if (r.status !== 200) throw new Error(`status ${r.status}`)
  }
  for (let i = 0; i < 30; i++) await send()
  const list = (await (await fetch(`http://127.0.0.1:${INSPECTOR}/json`)).json()) as {
    webSocketDebuggerUrl: string
  }[]
  const ws = new WebSocket(list[0]!.webSocketDebuggerUrl)
  await new Promise((resolve) => ws.addEventListener('open', resolve, { once: true }))
  let id = 0
  const waiting = new Map<number, (v: unknown) => void>()
  ws.addEventListener('message', (m) => {
    const msg = JSON.parse(String(m.data)) as { id?: number; result?: unknown }
    if (msg.id !== undefined) waiting.get(msg.id)?.(msg.result)
  })
  const call = (method: string, params: object = {}) =>
    new Promise<unknown>((resolve) => {
      waiting.set(++id, resolve)
      ws.send(JSON.stringify({ id, method, params }))
    })
  await call('Profiler.enable')
  await call('Profiler.setSamplingInterval', { interval: 100 })
  await call('Profiler.start')
  const start = performance.now()
  for (let i = 0; i < requests; i++) await send()
  const took = performance.now() - start
  const result = (await call('Profiler.stop')) as { profile: unknown }
  await writeFile(out, JSON.stringify(result.profile))
  console.log(`${mode}: ${requests} requests, ${(took / requests).toFixed(2)} ms each; ${out}`)
  ws.close()
  await mf.dispose()
  await sim.child.stop()
}

main().catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
