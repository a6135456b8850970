/**
 * @module Deterministic benchmark texts: English prose, CJK prose and source code, any length.
 */

import { prng as rng } from '../sim/random'

/** The simulator's seeded PRNG (mulberry32): same seed, same text, every run. */
export { rng }

const ENGLISH = (
  'the of and to in is that it was for on are as with his they at be this from have or by one had ' +
  'not but what all were when we there can an your which their said if do will each about how up ' +
  'out them then she many some so these would other into has more her two like him see time could ' +
  'no make than first been its who now people my made over did down only way find use may water ' +
  'long little very after words called just where most know get through back much before go good ' +
  'new write our used me man too any day same right look think also around another came come work ' +
  'three word must because does part even place well such here take why things help put years ' +
  'different away again off went old number great tell men say small every found still between ' +
  'name should home big give air line set own under read last never us left end along while might ' +
  'next sound below saw something thought both few those always looked show large often together ' +
  'asked house world going want school important until form food keep children feet land side ' +
  'without boy once animals life enough took sometimes four head above kind began almost live page ' +
  'got earth need far hand high year mother light parts country father let night following picture ' +
  'being study second eyes soon times story boys since white days ever paper hard near sentence ' +
  'better best across during today others however sure means knew try told young miles sun ways ' +
  'prefill decode tenant cache pool window token request answer stream guard model leak canary'
).split(' ')

const CJK =
  '的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面' +
  '而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性' +
  '好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第' +
  '向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管' +
  '特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处'

const CJK_PUNCTUATION = '，。、；：？！'

/**
 * English-like prose: frequent words, capitalised sentences, commas and full stops.
 *
 * @example
 * english(1, 10_000).length // 10_000
 */
export function english(seed: number, chars: number): string {
  const next = rng(seed)
  const parts: string[] = []
  let length = 0
  let sentence = 0
  while (length < chars) {
    let word = ENGLISH[Math.floor(next() * ENGLISH.length)]!
    if (sentence === 0) word = word[0]!.toUpperCase() + word.slice(1)
    sentence++
    const end = sentence > 6 && next() < 0.15
    if (end) sentence = 0
    const piece = `${word}${end ? '.' : next() < 0.05 ? ',' : ''} `
    parts.push(piece)
    length += piece.length
  }
  return parts.join('').slice(0, chars)
}

/**
 * CJK prose: the most frequent Chinese characters with full-width punctuation.
 *
 * @example
 * cjk(2, 1_000).length // 1_000
 */
export function cjk(seed: number, chars: number): string {
  const next = rng(seed)
  let text = ''
  while (text.length < chars) {
    const run = 4 + Math.floor(next() * 20)
    for (let i = 0; i < run; i++) text += CJK[Math.floor(next() * CJK.length)]
    text += CJK_PUNCTUATION[Math.floor(next() * CJK_PUNCTUATION.length)]
  }
  return text.slice(0, chars)
}

const IDENTS = [
  'cache',
  'pool',
  'tokens',
  'request',
  'tenant',
  'ceiling',
  'window',
  'reserve',
  'page',
  'stream',
  'decoder',
  'prefill',
  'result',
  'value',
  'index',
  'count',
  'limit',
  'drift',
  'profile',
  'model',
]
const TYPES = [
  'number',
  'string',
  'boolean',
  'Uint8Array',
  'Promise<void>',
  'Record<string, number>',
]

/**
 * TypeScript-like source: functions, indentation, operators, literals and comments.
 *
 * @example
 * code(3, 5_000).includes('function') // true
 */
export function code(seed: number, chars: number): string {
  const next = rng(seed)
  const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)]!
  const ident = () => `${pick(IDENTS)}${pick(['', 'Id', 'Size', 'Map', 'At', '2'])}`
  let text = ''
  while (text.length < chars) {
    const [fn, a, b, c] = [ident(), ident(), ident(), ident()]
    const n = Math.floor(next() * 100_000)
    text +=
      `/** Returns the ${a} for ${b} (see #${n}). */\n` +
      `export function ${fn}(${a}: ${pick(TYPES)}, ${b}: ${pick(TYPES)}): ${pick(TYPES)} {\n` +
      `  const ${c} = ${a} * ${n} + ${b}.length // ${pick(IDENTS)} ${pick(IDENTS)}\n` +
      `  if (${c} > 0x${n.toString(16)}) {\n    return { ${a}, ${b}: [${n}, ${c}] }\n  }\n` +
      `  return ${c} >= ${n % 97} ? '${pick(IDENTS)}' : null\n}\n\n`
  }
  return text.slice(0, chars)
}

/** The three text kinds the benchmarks compare. */
export const KINDS = { english, cjk, code } as const

/** One of {@link KINDS}. */
export type Kind = keyof typeof KINDS
