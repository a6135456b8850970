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
 * Portkey's in-process guardrails nearest to the guard's own checks, as a `x-portkey-config` header
 * value: on the prompt and on the answer, five `default.regexMatch` checks for the best-known secret
 * formats (OpenAI, GitHub/npm, AWS key id, Google, PEM private keys) that deny on a match, and on the
 * prompt a `default.wordCount` bound (Portkey has no tokenizer: the nearest thing to a ceiling). It
 * has nothing like a canary or a prefill timing, so it checks less than the guard does.
 *
 * @example
 * headers['x-portkey-config'] = portkeyGuardrails(`${sim.url}/v1`)
 */
export function portkeyGuardrails(customHost: string): string {
  const rules = [
    '(?<![A-Za-z0-9_-])sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{40,220}',
    '(?<![A-Za-z0-9_])(?:gh[pousr]|npm)_[A-Za-z0-9]{36}',
    '(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z2-7]{16}',
    'AIza[0-9A-Za-z_-]{35}',
    '-----BEGIN [A-Z ]*PRIVATE KEY-----',
  ]
  const secrets = Object.fromEntries(
    rules.map((rule, i) => [`secret${i}`, { id: 'default.regexMatch', rule, not: true }]),
  )
  const words = { id: 'default.wordCount', minWords: 1, maxWords: 500_000 }
  return JSON.stringify({
    provider: 'openai',
    custom_host: customHost,
    api_key: 'bench',
    input_guardrails: [{ ...secrets, words, deny: true }],
    output_guardrails: [{ ...secrets, deny: true }],
  })
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
