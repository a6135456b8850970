/**
 * @module The processes the peer and checks benchmarks put side by side: the simulator's HTTP server
 * and Portkey's open-source gateway, each a Node child of the bench on a loopback port.
 */
import { join } from 'node:path'
import { ROOT } from '../lib'
import { type Child, startChild } from './processes'

const PORTKEY = join(ROOT, 'node_modules', '@portkey-ai', 'gateway', 'build', 'start-server.js')

/**
 * The port a child printed as `{"port":N}` (the simulator and the guard's Node server do).
 *
 * @example
 * const url = `http://127.0.0.1:${printedPort(child.output())}`
 */
export function printedPort(printed: string): number {
  const match = /\{"port":(\d+)\}/.exec(printed)
  if (!match) throw new Error(`no port in: ${printed.slice(-500)}`)
  return Number(match[1])
}

/**
 * The simulator's OpenAI-compatible server (bench/support/sim-server.ts) in its own process.
 *
 * @example
 * const sim = await startSimulator()
 * await fetch(`${sim.url}/v1/chat/completions`, init)
 */
export async function startSimulator(): Promise<{ child: Child; url: string }> {
  const child = await startChild(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'bench', 'support', 'sim-server.ts')],
    /\{"port":\d+\}/,
    { cwd: ROOT },
  )
  return { child, url: `http://127.0.0.1:${printedPort(child.output())}` }
}

/**
 * Portkey's gateway, default config. It takes its port on the command line: a few in the ephemeral
 * range are tried.
 *
 * @example
 * const portkey = await startPortkey()
 */
export async function startPortkey(): Promise<{ child: Child; port: number; url: string }> {
  for (let attempt = 0; ; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 20_000)
    try {
      const child = await startChild(
        process.execPath,
        [PORTKEY, `--port=${port}`],
        /Ready for connections/,
      )
      return { child, port, url: `http://127.0.0.1:${port}` }
    } catch (error) {
      if (attempt === 4) throw error
    }
  }
}
