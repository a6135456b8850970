/**
 * @module Child process for the cold-start benchmark: import the ceiling, decide one prompt, report.
 *
 * `node --import tsx bench/cold-start.ts <small|large>` prints one JSON line. `small` is decided on
 * the byte bound (the tokenizer must not load); `large` needs a count (the tokenizer loads).
 */
import { english } from './texts'

const kind = process.argv[2] === 'large' ? 'large' : 'small'
// Generated before the clock starts: the figure is the guard's, not the generator's.
const text = english(42, kind === 'large' ? 900_000 : 4_000)
const bootMs = performance.now() // ms since this process started (Node's timeOrigin)

const importStart = performance.now()
const { decideCeiling, ceilingFor } = await import('../src/ceiling/ceiling')
const { promptPieces } = await import('../src/ceiling/prompt')
const { tokenizerLoaded } = await import('../src/ceiling/count')
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
    tokenizerLoaded: tokenizerLoaded(),
    totalMs: performance.now(),
  }),
)
