/**
 * @module Benchmark: a load simulation of many isolates against a model's fingerprint log spread over
 * a grid of shards (columns, by tenant) × replicas (rows) FingerprintLog objects
 * (src/worker/durable-fingerprints.ts), in workerd (Miniflare, SQLite-backed objects). Each guarded
 * request publishes its prompt to every row of its tenant's column and reads every column of its
 * isolate's row, from the isolate's cursors. One workerd process runs every object on one thread, so N
 * objects cannot be timed side by side here: each object's share of the same traffic is played alone
 * and timed, and the N objects' rate is the requests over the slowest object's time (in production
 * each object runs on its own thread). Figures go to bench/results/fingerprint-shards.json and
 * docs/fingerprints.md ("Sharding"); the shard count for 10,000 guarded requests a second is derived
 * from them there.
 */
import { convertV4MiniflareOptions, Miniflare } from 'miniflare'
import { machineInfo, median, type Suite, type SuiteOptions, writeResult } from '../lib'
import { bundleWorker } from '../support/workerd'

interface Row {
  shards: number
  replicas: number
  /** Objects: shards × replicas. */
  objects: number
  /** Median seconds of the same traffic on one object, played in the same samples. */
  single: number
  /** Median seconds of the whole traffic on every object (one thread: the objects take turns). */
  together: number
  /** Median seconds of each object's share, played alone. */
  perShard: number[]
  /** Requests a second the N objects sustain: requests over the slowest object's share. */
  rate: number
  /** One object's time ÷ the slowest share's, per sample (median): the N objects' rate ÷ one's. */
  speedup: number
}

/** Guarded requests a second the derivation is for, and the busy share an object may reach. */
const TARGET = 10_000
const UTILIZATION = 0.5

/**
 * The cost model fitted to the rows: the slowest object's seconds per guarded request is
 * `publish / shards + read / replicas + data / (shards × replicas)` — its column's share of the
 * publishes, its row's share of the reads (each read's fixed cost: the call and one indexed query),
 * and its share of the read data. Least squares over the rows, each row's time taken as `base` (one
 * object's seconds per request, over every sample) over its speedup: the speedup is measured within
 * each sample, so the machine's drifting load (it is shared) cancels out of it. Seconds.
 */
export function fitCosts(
  rows: readonly Pick<Row, 'shards' | 'replicas' | 'speedup'>[],
  base: number,
): {
  publish: number
  read: number
  data: number
} {
  // Normal equations of y = x·β with x = (1/W, 1/R, 1/(W·R)), y = 1 / rate.
  const xtx = [
    [0, 0, 0],
    [0, 0, 0],
    [0, 0, 0],
  ]
  const xty = [0, 0, 0]
  for (const row of rows) {
    const x = [1 / row.shards, 1 / row.replicas, 1 / (row.shards * row.replicas)]
    const y = base / row.speedup
    for (let i = 0; i < 3; i++) {
      xty[i]! += x[i]! * y
      for (let j = 0; j < 3; j++) xtx[i]![j]! += x[i]! * x[j]!
    }
  }
  const [publish, read, data] = solve3(xtx, xty).map((v) => Math.max(0, v))
  return { publish: publish!, read: read!, data: data! }
}

/** Gaussian elimination of a 3×3 system. */
function solve3(a: number[][], b: number[]): number[] {
  const m = a.map((row, i) => [...row, b[i]!])
  for (let c = 0; c < 3; c++) {
    let pivot = c
    for (let r = c + 1; r < 3; r++) if (Math.abs(m[r]![c]!) > Math.abs(m[pivot]![c]!)) pivot = r
    ;[m[c], m[pivot]] = [m[pivot]!, m[c]!]
    for (let r = 0; r < 3; r++) {
      if (r === c) continue
      const f = m[r]![c]! / m[c]![c]!
      for (let k = c; k < 4; k++) m[r]![k]! -= f * m[c]![k]!
    }
  }
  return m.map((row, i) => row[3]! / row[i]!)
}

/**
 * The grid with the fewest objects whose busiest object stays under {@link UTILIZATION} at `target`
 * guarded requests a second (each one publish and one read of the model's log), by the fitted costs.
 */
export function gridFor(
  costs: { publish: number; read: number; data: number },
  target = TARGET,
): { shards: number; replicas: number; objects: number; busy: number } | undefined {
  let best: { shards: number; replicas: number; objects: number; busy: number } | undefined
  for (let shards = 1; shards <= 256; shards++) {
    for (let replicas = 1; replicas * shards <= 4096; replicas++) {
      const busy =
        target * (costs.publish / shards + costs.read / replicas + costs.data / (shards * replicas))
      if (busy > UTILIZATION) continue
      const objects = shards * replicas
      if (!best || objects < best.objects) best = { shards, replicas, objects, busy }
      break // more replicas only add objects
    }
  }
  return best
}

async function run({ quick }: SuiteOptions): Promise<void> {
  const scriptPath = await bundleWorker('bench-fingerprint-shards', {
    entryPoints: ['bench/support/fingerprint-shards-worker.ts'],
  })
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      workers: [
        {
          name: 'fingerprint-shards',
          modules: true,
          scriptPath,
          compatibilityDate: '2026-11-01',
          durableObjects: {
            LOG: { className: 'FingerprintLog', useSQLite: true },
            NOOP: { className: 'NoopLog', useSQLite: true },
          },
        },
      ],
    } as Parameters<typeof convertV4MiniflareOptions>[0]),
  )
  const url = (await mf.ready).href.replace(/\/$/, '')
  const requests = quick ? 1_000 : 2_000
  const isolates = 50
  const concurrency = 16
  const samples = quick ? 1 : 3
  // (shards, replicas): columns alone, then grids of the same object counts.
  const grids: [number, number][] = quick
    ? [
        [1, 1],
        [2, 1],
        [4, 1],
        [2, 2],
      ]
    : [
        [1, 1],
        [2, 1],
        [4, 1],
        [8, 1],
        [2, 2],
        [4, 2],
        [4, 4],
      ]
  let runs = 0
  const play = async (
    shards: number,
    replicas: number,
    only?: number,
    noop = false,
  ): Promise<number> => {
    const query = new URLSearchParams({
      ...(noop ? { noop: '1' } : {}),
      run: `r${runs++}`,
      shards: String(shards),
      replicas: String(replicas),
      isolates: String(isolates),
      requests: String(requests),
      concurrency: String(concurrency),
      ...(only === undefined ? {} : { only: String(only) }),
    })
    const t = performance.now()
    const response = await fetch(`${url}/load?${query}`, { method: 'POST' })
    if (!response.ok) throw new Error(`load: ${response.status} ${await response.text()}`)
    await response.json()
    return (performance.now() - t) / 1000
  }
  const rows: Row[] = []
  const calls: number[] = []
  try {
    await play(1, 1) // warm-up: bundle compiled, SQLite opened
    for (const [shards, replicas] of grids) {
      const objects = shards * replicas
      const single: number[] = []
      const together: number[] = []
      const perShard: number[][] = Array.from({ length: objects }, () => [])
      const speedups: number[] = []
      for (let s = 0; s < samples; s++) {
        // One object's time in the same sample: the machine is shared, and its load drifts.
        const one = await play(1, 1)
        single.push(one)
        if (objects === 1) {
          together.push(one)
          perShard[0]!.push(one)
          speedups.push(1)
          continue
        }
        together.push(await play(shards, replicas))
        const shares: number[] = []
        for (let o = 0; o < objects; o++) shares.push(await play(shards, replicas, o))
        for (const [o, share] of shares.entries()) perShard[o]!.push(share)
        speedups.push(one / Math.max(...shares))
      }
      const shares = perShard.map(median)
      const row: Row = {
        shards,
        replicas,
        objects,
        single: median(single),
        together: median(together),
        perShard: shares,
        rate: requests / Math.max(...shares),
        speedup: median(speedups),
      }
      console.log(
        `  ${shards}×${replicas} = ${String(objects).padStart(2)} objects  one ${row.single.toFixed(2)} s (${Math.round(requests / row.single)} req/s)  slowest share ${Math.max(...shares).toFixed(2)} s (${Math.round(row.rate)} req/s)  ×${row.speedup.toFixed(2)}`,
      )
      rows.push(row)
    }
    // The calls alone, to objects that store nothing: what of one object's time is RPC here.
    for (let s = 0; s < samples; s++) calls.push(await play(1, 1, undefined, true))
  } finally {
    await mf.dispose()
  }
  const callsOnly = median(calls) / requests
  console.log(
    `  calls alone (objects that store nothing): ${(callsOnly * 1e3).toFixed(3)} ms per request`,
  )
  const base = median(rows.map((r) => r.single)) / requests
  const costs = fitCosts(rows, base)
  const grid = gridFor(costs)
  console.log(
    `  fitted per guarded request: publish ${(costs.publish * 1e3).toFixed(3)} ms, read ${(costs.read * 1e3).toFixed(3)} ms, data ${(costs.data * 1e3).toFixed(3)} ms; ` +
      `${TARGET.toLocaleString('en-US')} req/s at ≤ ${UTILIZATION * 100}% busy: ${grid ? `${grid.shards} × ${grid.replicas} = ${grid.objects} objects` : 'no grid'}`,
  )
  const path = await writeResult('fingerprint-shards', {
    suite: 'fingerprint-shards',
    date: new Date().toISOString(),
    quick,
    machine: machineInfo(),
    config: { requests, isolates, tenants: 100, hashesPerPrompt: 200, concurrency, samples },
    note: 'Each guarded request: an append of 200 fingerprints to every row of its tenant\'s column and a read of every column of its isolate\'s row, from its cursors (50 isolates round-robin, isolate i on row i mod replicas). "together": the whole traffic in one workerd thread; "perShard": each object\'s share played alone; rate = requests / slowest share.',
    rows,
    fit: {
      oneObjectSecondsPerRequest: base,
      oneObjectRate: 1 / base,
      callsOnlySecondsPerRequest: callsOnly,
      secondsPerRequest: costs,
      target: TARGET,
      utilization: UTILIZATION,
      grid,
    },
  })
  console.log(`  wrote ${path}`)
}

const suite: Suite = { name: 'fingerprint-shards', run }
export default suite
