/**
 * @module Child process for the cold-start benchmark: import the ceiling, decide one prompt, report.
 *
 * `node --import tsx bench/cold-start.ts <small|large>` prints one JSON line. `small` is decided on
 * the byte bound (the tokenizer must not load); `large` needs a count (the tokenizer loads).
 */
import { english } from './texts'

/** `node:module`'s in-thread hooks (Node ≥ 22.15), typed here: the project has no @types/node. */
interface ModuleHooks {
  registerHooks(hooks: {
    resolve: (
      specifier: string,
      context: unknown,
      next: (s: string, c: unknown) => unknown,
    ) => unknown
  }): unknown
}

// Whether the guard loaded the tokenizer, seen from outside: src/core/ceiling/count.ts imports o200k's
// vocabulary on its first count, so any resolution of it in this process is that load.
let tokenizerLoaded = false
const { registerHooks } = (await import('node:module' as string)) as ModuleHooks
registerHooks({
  resolve(specifier, context, next) {
    if (specifier.includes('o200k_base')) tokenizerLoaded = true
    return next(specifier, context)
  },
})

const kind = process.argv[2] === 'large' ? 'large' : 'small'
// Generated before the clock starts: the figure is the guard's, not the generator's.
const text = english(42, kind === 'large' ? 900_000 : 4_000)
const bootMs = performance.now() // ms since this process started (Node's timeOrigin)

const importStart = performance.now()
const { decideCeiling, ceilingFor } = await import('../src/core/ceiling/ceiling')
const { promptPieces } = await import('../src/core/ceiling/prompt')
const importMs = performance.now() - importStart

const decideStart = performance.now()
const pieces = promptPieces({ messages: [{ role: 'user', content: text }] })
const ceiling = ceilingFor({ contextWindow: 1_048_576, kvPoolTokens: 681_280 }, 4_096)
const decision = await decideCeiling(pieces, ceiling, () => 0.03)
const decideMs = performance.now() - decideStart

console.log(
  JSON.stringify({
    kind,
    bootMs,
    importMs,
    decideMs,
    method: decision.method,
    tokenizerLoaded,
    totalMs: performance.now(),
  }),
)
