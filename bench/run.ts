/**
 * @module `npm run bench [-- --quick] [-- <suite> …]`: runs the suites in bench/suites/ on Node 22,
 * each in a Node process of its own. One suite's heap (the ceiling's four reference tokenizers, the
 * detection matrix's engines) and JIT state would otherwise weigh on the next one's figures: the
 * streaming suite's guard measured 64% of pass-through after three other suites in one process, 70%
 * alone, in one sitting.
 */
import { spawn } from 'node:child_process'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { BENCH_DIR, type Suite } from './lib'

const SUITES_DIR = join(BENCH_DIR, 'suites')

function isSuite(value: unknown): value is Suite {
  if (typeof value !== 'object' || value === null) return false
  const suite = value as Record<string, unknown>
  return typeof suite.name === 'string' && typeof suite.run === 'function'
}

async function main(): Promise<void> {
  // `process` is untyped here (no @types/node): give its values their types at the boundary.
  const argv: string[] = process.argv
  const args = argv.slice(2).filter((arg) => arg !== '--')
  const quick = args.includes('--quick')
  const child = args.includes('--child')
  const wanted = args.filter((arg) => !arg.startsWith('--'))
  const version: string = process.versions.node
  const major = Number(version.split('.')[0])
  // The figures are Node 22's (the package's pinned `node` devDependency, first on PATH under npm).
  if (major < 22) console.warn(`warning: Node ${process.version}; these benchmarks target Node 22`)

  const files = (await readdir(SUITES_DIR)).filter((f) => f.endsWith('.ts')).sort()
  const suites: Suite[] = []
  for (const file of files) {
    const module: Record<string, unknown> = await import(pathToFileURL(join(SUITES_DIR, file)).href)
    if (isSuite(module.default)) suites.push(module.default)
  }
  const unknown = wanted.filter((name) => !suites.some((suite) => suite.name === name))
  if (unknown.length > 0) {
    throw new Error(
      `Unknown suite(s): ${unknown.join(', ')}. Available: ${suites.map((s) => s.name).join(', ')}`,
    )
  }
  for (const suite of suites) {
    if (wanted.length > 0 && !wanted.includes(suite.name)) continue
    if (child) {
      await suite.run({ quick })
      continue
    }
    const start = performance.now()
    console.log(`▶ ${suite.name}${quick ? ' (quick)' : ''}`)
    await runApart(suite.name, quick)
    console.log(`✔ ${suite.name} in ${((performance.now() - start) / 1000).toFixed(1)} s`)
  }
}

/** Runs one suite in a new process of this Node, with this one's loader flags (tsx's). */
function runApart(name: string, quick: boolean): Promise<void> {
  const node: string = process.execPath
  const loader: string[] = process.execArgv
  const script: string = process.argv[1]
  const flags = ['--child', ...(quick ? ['--quick'] : []), name]
  const run = spawn(node, [...loader, script, ...flags], {
    stdio: ['inherit', 'inherit', 'inherit'],
  })
  return new Promise((resolve, reject) => {
    run.on('error', reject)
    run.on('close', (status) => {
      if (status === 0) resolve()
      else reject(new Error(`suite ${name} failed (exit ${status ?? 'by signal'})`))
    })
  })
}

main().catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
