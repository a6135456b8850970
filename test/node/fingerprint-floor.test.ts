/**
 * @module The span floor and per-script weights of the foreign-content watch: k selections packed
 * into a phrase shorter than any quote the guard must catch are not evidence (a code preamble or a
 * stock sentence that one tenant pasted, which the model then says to everyone and which, withheld
 * each time, would never become its known words), and Han, kana and Thai text is weighed per word,
 * not per character — while every span of the stated minimum is still caught, and no character of
 * it leaves a stream before its evidence (test/guard/honest-traffic.test.ts found the first two).
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { english } from '../../bench/texts'
import { prng } from '../../sim/random'
import {
  ContentWatch,
  type ContentWatchOptions,
  FINGERPRINT_DEFAULTS,
  type FingerprintKey,
  FingerprintTable,
  minimumSpan,
  printPrompt,
  scanAnswer,
  spanFloor,
  units,
  unitWeight,
  WORD_WEIGHT,
} from '../../src/plugins/foreign-content'
import { span, testFingerprintKey } from '../support/fingerprint-fixtures'
import { udhrText } from './ceiling-corpus'

const MODEL = '@cf/zai-org/glm-5.3'
const PARAMS = FINGERPRINT_DEFAULTS
const SPAN = minimumSpan(PARAMS)
const NOW = 1_000_000

let key: FingerprintKey
beforeAll(async () => {
  key = await testFingerprintKey('y')
})

function options(sent: string[]): ContentWatchOptions {
  const table = new FingerprintTable(FINGERPRINT_DEFAULTS)
  table.add(MODEL, 'acme', printPrompt(key, sent, PARAMS).selected, NOW - 60_000)
  return {
    key,
    table,
    model: MODEL,
    tenant: 'globex',
    own: printPrompt(key, [], PARAMS),
    now: NOW,
    params: PARAMS,
  }
}

/** The UDHR of a language as one line of text (its paragraphs joined by spaces). */
const declaration = (code: string) => udhrText(code).replace(/\n/g, ' ')

describe('the span floor', () => {
  it('should be (k − 2)·w + n + 1 units: 24 at the defaults, within the minimum span', () => {
    expect(spanFloor(PARAMS)).toBe(24)
    expect(spanFloor(PARAMS)).toBeLessThanOrEqual(SPAN - 2 * PARAMS.w + 2)
    expect(unitWeight('a'.codePointAt(0)!)).toBe(WORD_WEIGHT)
    expect(unitWeight('人'.codePointAt(0)!)).toBe(WORD_WEIGHT / 2)
    expect(unitWeight('か'.codePointAt(0)!)).toBe(WORD_WEIGHT / 2)
    expect(unitWeight('ก'.codePointAt(0)!)).toBe(WORD_WEIGHT / 3)
    expect(unitWeight('д'.codePointAt(0)!)).toBe(WORD_WEIGHT)
  })

  it('should never make evidence of a phrase of fewer units than the floor, wherever it falls', () => {
    // Six of the fifteen to seventeen selections of a 21-23-unit phrase are often consecutive: without
    // the floor, some of these phrases made evidence (a pasted code preamble, a long sign-off).
    const next = prng(21)
    let runsOfK = 0
    for (let trial = 0; trial < 400; trial++) {
      const source = english(7000 + trial, 1500)
      const length = 18 + Math.floor(next() * 6)
      const phrase = span(source, Math.floor(next() * (units(source).length - length)), length)
      const host = english(8000 + trial, 800)
      const cut = host.indexOf(' ', Math.floor(next() * 700))
      const answer = `${host.slice(0, cut)} ${phrase}. ${host.slice(cut)}`
      const watch = new ContentWatch(options([source]))
      watch.push('content', answer, true)
      expect(watch.evidence(), `trial ${trial}`).toBeUndefined()
      if ((watch.strongest()?.run ?? 0) === PARAMS.k - 1) runsOfK++
    }
    // The phrases did pack k − 1 or more selections (capped): the floor, not chance, held them.
    expect(runsOfK).toBeGreaterThan(10)
  })

  it('should still find every span of the minimum, in Latin, Cyrillic, Han, kana and Thai', () => {
    const next = prng(22)
    // The minimum in each script's units: 30 words, or the characters that weigh as much.
    const scripts: [string, number][] = [
      ['eng', SPAN],
      ['rus', SPAN],
      ['cmn_hans', SPAN * 2],
      ['jpn', SPAN * 2],
      ['tha', SPAN * 3],
    ]
    for (const [code, length] of scripts) {
      const source = declaration(code)
      for (let trial = 0; trial < 60; trial++) {
        const first = Math.floor(next() * (units(source).length - length))
        const quote = span(source, first, length)
        const answer = `${english(9000 + trial, 500)} ${quote} ${english(9500 + trial, 300)}`
        const found = scanAnswer(options([source]), { content: answer })
        expect(found?.source, `${code} trial ${trial}`).toBe('acme')
      }
    }
  })

  it('should weigh a Han or kana sentence per word: 30–46 characters are not evidence', () => {
    // What a CJK sign-off is (a 45-character Japanese one was once withheld as a leak): as many
    // units as a 30-unit English quote, but half its words.
    const next = prng(23)
    for (const code of ['cmn_hans', 'jpn']) {
      const source = declaration(code)
      for (let trial = 0; trial < 100; trial++) {
        const length = 30 + Math.floor(next() * 17)
        const quote = span(source, Math.floor(next() * (units(source).length - length)), length)
        const answer = `${english(9700 + trial, 400)} ${quote} ${english(9800 + trial, 300)}`
        expect(
          scanAnswer(options([source]), { content: answer }),
          `${code} ${trial}`,
        ).toBeUndefined()
      }
    }
  })

  it('should hold back every character of a Han span until its evidence, at any split', () => {
    const next = prng(24)
    const source = declaration('cmn_hans')
    for (let trial = 0; trial < 150; trial++) {
      const length = SPAN * 2 + Math.floor(next() * 6)
      const quote = span(source, Math.floor(next() * (units(source).length - length)), length)
      const host = english(9900 + trial, 600)
      const cut = host.indexOf(' ', Math.floor(next() * 500))
      const answer = `${host.slice(0, cut)} ${quote} ${host.slice(cut)}`
      const quoteAt = answer.indexOf(quote)
      const watch = new ContentWatch(options([source]))
      let released = 0
      for (let at = 0; at < answer.length && !watch.evidence(); ) {
        const size = 1 + Math.floor(next() * 12)
        watch.push('content', answer.slice(at, at + size), false)
        at += size
        if (!watch.evidence()) released = Math.max(released, watch.safeFrom('content'))
      }
      expect(watch.evidence()?.source, `trial ${trial}`).toBe('acme')
      expect(released, `trial ${trial}`).toBeLessThanOrEqual(quoteAt)
    }
  })
})
