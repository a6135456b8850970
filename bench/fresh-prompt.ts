/**
 * @module Child process of the prompt-cpu benchmark: one stage on one text, as a fresh isolate's
 * first maximal prompt meets it.
 *
 * `node --import tsx bench/fresh-prompt.ts <stage> <text file>` prints one JSON line `{ "ms": … }`.
 * The tokenizer is loaded and the code warmed on a short text of other words first, so the figure is
 * the stage's work on pre-tokens the isolate has not merged yet, not the vocabulary's load.
 */
import { readFile } from 'node:fs/promises'
import { countTokens } from '../src/core/ceiling/count'
import { FRESH_STAGES } from './support/prompt-stages'

const [stage = '', file = ''] = process.argv.slice(2)
const fn = FRESH_STAGES[stage]
if (!fn) throw new Error(`fresh-prompt: unknown stage ${JSON.stringify(stage)}`)
const text = await readFile(file, 'utf8')
// Digits and punctuation only: loads the vocabulary (a short prompt is settled by its byte bound and
// would not) and warms every stage's code without putting the text's pre-tokens in the merge memo.
const warm = Array.from({ length: 4_000 }, (_, i) => `${i * 7919}, `).join('')
await countTokens([warm])
for (let i = 0; i < 5; i++) await fn(warm)
const start = performance.now()
await fn(text)
console.log(JSON.stringify({ ms: performance.now() - start }))
