/**
 * @module Benchmark: one publish to the `FingerprintLog` Durable Object (every guarded request makes
 * one, two with its answer) as the log fills, against the previous publish (a scan of the whole log
 * each time), side by side in one run in workerd (Miniflare, SQLite-backed objects).
 */
import { convertV4MiniflareOptions, Miniflare } from 'miniflare'
import { machineInfo, median, ms, type Suite, type SuiteOptions, writeResult } from '../lib'
import { bundleWorker } from '../support/workerd'

/** Log sizes timed, in batches of 200 fingerprints (20,000 is the 4,000,000-fingerprint budget). */
const SIZES = [1_000, 5_000, 10_000, 20_000]

interface Row {
  batches: number
  /** Median time of one publish, ms, from Node (samples of `perSample` publishes each). */
  current: number
  scanning: number
}

async function run({ quick }: SuiteOptions): Promise<void> {
  const scriptPath = await bundleWorker('bench-fingerprint-log', {
    entryPoints: ['bench/support/fingerprint-log-worker.ts'],
  })
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      workers: [
        {
          name: 'fingerprint-log',
          modules: true,
          scriptPath,
          compatibilityDate: '2026-11-01',
          durableObjects: {
            CURRENT: { className: 'FingerprintLog', useSQLite: true },
            SCANNING: { className: 'ScanningLog', useSQLite: true },
          },
        },
      ],
    } as Parameters<typeof convertV4MiniflareOptions>[0]),
  )
  const url = (await mf.ready).href.replace(/\/$/, '')
  const sizes = quick ? SIZES.slice(0, 2) : SIZES
  const perSample = 20
  const samples = quick ? 5 : 15
  const rows: Row[] = []
  try {
    let filled = 0
    for (const batches of sizes) {
      for (const log of ['current', 'scanning']) {
        await fetch(`${url}/fill?log=${log}&batches=${batches - filled}`, { method: 'POST' })
      }
      filled = batches
      const times: Record<'current' | 'scanning', number[]> = { current: [], scanning: [] }
      for (let s = 0; s < samples; s++) {
        for (const log of s % 2 === 0 ? ['current', 'scanning'] : ['scanning', 'current']) {
          const t = performance.now()
          await fetch(`${url}/publish?log=${log}&n=${perSample}`, { method: 'POST' })
          times[log as 'current' | 'scanning'].push((performance.now() - t) / perSample)
        }
      }
      // Each sample's publishes add to the log: the next size is filled up from where it stands.
      filled += samples * perSample
      const row = { batches, current: median(times.current), scanning: median(times.scanning) }
      console.log(
        `  ${String(batches).padStart(6)} batches  current ${ms(row.current).padStart(9)}  previous ${ms(row.scanning).padStart(9)}  ×${(row.scanning / row.current).toFixed(1)}`,
      )
      rows.push(row)
    }
  } finally {
    await mf.dispose()
  }
  const path = await writeResult('fingerprint-log', {
    suite: 'fingerprint-log',
    date: new Date().toISOString(),
    quick,
    machine: machineInfo(),
    config: { hashesPerBatch: 200, publishesPerSample: perSample, samples },
    note: 'Median time of one publish (ms), timed from Node over loopback HTTP through a Worker that awaits each publish; current and previous alternate.',
    rows,
  })
  const m = machineInfo()
  const table = [
    'One publish to the `FingerprintLog` Durable Object as the log fills (batches of 200 fingerprints; ' +
      '20,000 is the 4,000,000-fingerprint budget), the current publish against the previous one (a ttl ' +
      'delete and a sum over the whole log each time), alternating in one run in workerd ' +
      `(Miniflare, SQLite storage). Node ${m.node}, ${m.cpu} (${m.cores} cores)${quick ? ', quick run' : ''}.`,
    '',
    '| batches in the log | publish, current (median) | publish, previous (median) | previous ÷ current |',
    '|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.batches.toLocaleString('en-US')} | ${ms(r.current)} | ${ms(r.scanning)} | ${(r.scanning / r.current).toFixed(1)} |`,
    ),
  ].join('\n')
  console.log(table)
  console.log(`  wrote ${path}`)
}

const suite: Suite = { name: 'fingerprint-log', run }
export default suite
