/**
 * @module Benchmark: what secrets substitution costs one request — detect, substitute (detect plus
 * one HMAC per distinct secret), restore (this request's stand-ins back, and every stand-in candidate
 * of the answer checked for another request's) — at 1k, 32k and 256k o200k tokens of English prose
 * and of source code with a secret of a random kind every ~2,000 characters, side by side in one run
 * with the scan the guard already makes (the canary pattern over the same text); and each detector
 * on 1 MB of input built against it (the `adversarial` rows, bench/support/secrets-adversarial.ts).
 */
import { CANARY_PATTERN } from '../../src'
import { countTokens } from '../../src/core/ceiling/count'
import {
  builtInDetectors,
  findSecrets,
  importStandInKey,
  StandInBook,
} from '../../src/plugins/secrets'
import { chars, GENERATORS, pick, rng } from '../../test/secrets/generate'
import {
  machineInfo,
  median,
  ms,
  type Suite,
  type SuiteOptions,
  sideBySide,
  writeResult,
} from '../lib'
import { adversarialRows } from '../support/secrets-adversarial'
import { code, english } from '../texts'

/**
 * Characters of `make` text that hold about `target` o200k tokens.
 *
 * @example
 * english(11, await charsFor(english, 32_000))
 */
export async function charsFor(
  make: (seed: number, chars: number) => string,
  target: number,
): Promise<number> {
  const sample = make(7, 50_000)
  return Math.round((target * sample.length) / (await countTokens([sample])))
}

/**
 * `text` with a realistic secret line inserted at a line or sentence break every ~`every` chars.
 *
 * @example
 * sprinkle(code(11, 100_000), 2_000, 1).secrets // about 50
 */
export function sprinkle(
  text: string,
  every: number,
  seed: number,
): { text: string; secrets: number } {
  const r = rng(seed)
  const generators = Object.values(GENERATORS)
  const parts: string[] = []
  let at = 0
  let secrets = 0
  while (at < text.length) {
    const next = Math.min(text.length, at + every)
    const cut = Math.max(text.lastIndexOf('\n', next), text.lastIndexOf('. ', next))
    const end = cut > at ? cut + 1 : next
    parts.push(text.slice(at, end))
    if (end < text.length) {
      const { value, line } = pick(r, generators)(r)
      parts.push(`\n${line.replace('$', value)}\n`)
      secrets++
    }
    at = end
  }
  return { text: parts.join(''), secrets }
}

/**
 * An answer as costly to restore as any: 40-character tokens (a candidate of two kinds each) and
 * 16-digit numbers (card candidates, one in ten passing the cheap check), none a stand-in.
 */
function lookAlikeAnswer(length: number, seed: number): string {
  const r = rng(seed + 1)
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
  let text = ''
  while (text.length < length) {
    text += r() < 0.5 ? `${chars(r, alphabet, 40)} ` : `4${chars(r, '0123456789', 15)} `
  }
  return text.slice(0, length)
}

interface Row {
  text: string
  targetTokens: number
  tokens: number
  chars: number
  secrets: number
  runs: number
  medianMs: Record<string, number>
  ratioToCanaryScan: Record<string, number>
}

const SIZES = [1_000, 32_000, 256_000]

async function run({ quick }: SuiteOptions): Promise<void> {
  const key = await importStandInKey('bench secret: at least thirty-two bytes long')
  const detectors = builtInDetectors()
  const rows: Row[] = []
  for (const [name, make] of Object.entries({ english, code })) {
    for (const target of SIZES) {
      const base = make(11, await charsFor(make, target))
      const { text, secrets } = sprinkle(base, 2_000, target)
      const tokens = await countTokens([text])
      const book = await StandInBook.open(key, { requestId: 'bench', tenant: 'bench' }, detectors)
      const sent = (await book.substitute(text)).text
      const lookAlikes = lookAlikeAnswer(text.length, target)
      let requests = 0
      const contenders = {
        'canary scan (baseline)': () => {
          let n = 0
          for (const _ of text.matchAll(CANARY_PATTERN)) n++
          return n
        },
        detect: () => findSecrets(text, detectors).length,
        substitute: async () => {
          const fresh = await StandInBook.open(
            key,
            { requestId: `r${requests++}`, tenant: 't' },
            detectors,
          )
          return (await fresh.substitute(text)).text.length
        },
        'restore (answer = whole substituted prompt)': async () =>
          (await book.restore(sent)).text.length,
        'restore (answer of look-alikes)': async () => (await book.restore(lookAlikes)).text.length,
        // The common answer: the text alone, no secret in it, so no stand-in and few candidates.
        'restore (answer without secrets)': async () => (await book.restore(base)).text.length,
      }
      const runs =
        target <= 1_000 ? (quick ? 30 : 200) : target <= 32_000 ? (quick ? 8 : 40) : quick ? 3 : 10
      const samples = await sideBySide(contenders, runs, 1)
      const medianMs = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]))
      const baseline = medianMs['canary scan (baseline)']!
      const total = medianMs.substitute! + medianMs['restore (answer = whole substituted prompt)']!
      medianMs['substitute + restore'] = total
      const ratioToCanaryScan = Object.fromEntries(
        Object.entries(medianMs).map(([k, v]) => [k, +(v / baseline).toFixed(1)]),
      )
      rows.push({
        text: name,
        targetTokens: target,
        tokens,
        chars: text.length,
        secrets,
        runs,
        medianMs,
        ratioToCanaryScan,
      })
      console.log(
        `  ${name.padEnd(7)} ${String(tokens).padStart(7)} tok, ${String(secrets).padStart(4)} secrets: ` +
          `canary scan ${ms(baseline)}, detect ${ms(medianMs.detect!)}, substitute ${ms(medianMs.substitute!)}, ` +
          `restore ${ms(medianMs['restore (answer = whole substituted prompt)']!)}, both ${ms(total)}, ` +
          `look-alike answer ${ms(medianMs['restore (answer of look-alikes)']!)}, ` +
          `answer without secrets ${ms(medianMs['restore (answer without secrets)']!)}`,
      )
    }
  }
  const adversarial = await adversarialRows(quick ? 3 : 7)
  const path = await writeResult(quick ? 'secrets-quick' : 'secrets', {
    suite: 'secrets',
    date: new Date().toISOString(),
    quick,
    machine: machineInfo(),
    note:
      'Median ms per request, contenders alternated per round in one run. substitute = a fresh ' +
      'StandInBook (two HMACs) + detect + one HMAC per distinct secret; restore = own stand-ins back ' +
      'and every stand-in candidate of the answer checked for another request (an HMAC each), with ' +
      'the whole substituted prompt as the answer (the worst case: a model that repeats everything); ' +
      'answer of look-alikes = as many characters of 40-character tokens and 16-digit numbers, none ' +
      'a stand-in (the most candidates an answer can hold); answer without secrets = the text before ' +
      'its secret lines were added (the common answer: no stand-in, and runs of key characters only ' +
      'where the text has them, so most kinds are not searched at all). adversarial = each ' +
      'detector alone on 1 MB of each unit of test/secrets/generate.ts ADVERSARIAL_UNITS repeated ' +
      '(median ms per scan, inputs alternated per round), and its slowest input at 256 KB and 1 MB ' +
      'side by side (growth 4 is linear; quadratic would be 16).',
    rows,
    adversarial,
  })
  console.log(`  wrote ${path}`)
}

const suite: Suite = { name: 'secrets', run }
export default suite
