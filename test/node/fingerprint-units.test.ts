import { beforeAll, describe, expect, it } from 'vitest'
import { english } from '../../bench/texts'
import { prng } from '../../sim/random'
import { contentSeed, importCanaryKey } from '../../src/core/canary'
import {
  type FingerprintKey,
  fingerprintKey,
  type Shingle,
  Shingler,
  UnitReader,
  units,
} from '../../src/plugins/foreign-content'
import { sipHash52 } from '../../src/plugins/foreign-content/siphash'

let key: FingerprintKey
beforeAll(async () => {
  key = fingerprintKey(await contentSeed(await importCanaryKey('x'.repeat(32))))
})

const texts = (text: string) => units(text).map((u) => u.text)

describe('fingerprint units', () => {
  it('should cut words at everything but letters, digits and marks, case-folded and NFKC', () => {
    expect(texts('Don\'t "PANIC"! — «Ｆｏｏ» **bar_baz** x²')).toEqual([
      'don',
      't',
      'panic',
      'foo',
      'bar',
      'baz',
      'x2', // NFKC: the superscript is a digit
    ])
    expect(texts('café CAFÉ cafe\u0301')).toEqual(['café', 'café', 'café'])
    expect(texts('👍 emoji, €5 and 1,234.5')).toEqual(['emoji', '5', 'and', '1', '234', '5'])
  })

  it('should give a short unit the same normal form the first time and every time after', () => {
    // Units of up to four code units are normalised once and remembered: a Thai letter whose two
    // marks NFKC puts in canonical order, a fullwidth word, a compatibility ideograph.
    for (let pass = 0; pass < 2; pass++) {
      expect(texts('\u0e01\u0e48\u0e38')).toEqual(['\u0e01\u0e38\u0e48'])
      expect(texts('ＡＢＣ')).toEqual(['abc'])
      expect(texts('\uf900')).toEqual(['\u8c48'])
      expect(texts('ที่')).toEqual(['ที่'])
    }
  })

  it('should make each character of a script written without spaces a unit of its own', () => {
    expect(texts('東京タワーに行く')).toEqual(['東', '京', 'タ', 'ワ', 'ー', 'に', '行', 'く'])
    expect(texts('ภาษาไทย')).toHaveLength(7)
    // Korean writes spaces: its words stay whole.
    expect(texts('한국어 문장')).toEqual(['한국어', '문장'])
    // A combining mark stays with the character it follows.
    expect(texts('กิน')).toEqual(['กิ', 'น'])
  })

  it('should read JSON escapes at any depth, and keep the offsets of the input', () => {
    expect(texts('a\\nb\\t"c\\"d\\\\e')).toEqual(['a', 'b', 'c', 'd', 'e'])
    expect(texts('caf\\u00e9 caf\\\\u00e9 café')).toEqual(['café', 'café', 'café'])
    expect(texts('\\ud840\\udc00 \\ud83d\\ude00x')).toEqual(['𠀀', 'x'])
    expect(units('say "caf\\u00e9"')[1]).toEqual({ text: 'café', start: 5, end: 14 })
    // A quote and its JSON-escaped form give the same units.
    const quote = 'He said: "stop — now",\n\tthen left\\right.'
    expect(texts(JSON.stringify(quote))).toEqual(texts(quote))
    expect(texts(JSON.stringify(JSON.stringify(quote)))).toEqual(texts(quote))
  })

  it('should give the same units whatever the pieces a text arrives in', () => {
    const text = 'Ünïcode “quotes” caf\\u00e9 \\ud83d\\ude00 東京 😀 end\\n'
    const whole = units(text)
    for (let cut = 0; cut <= text.length; cut++) {
      const reader = new UnitReader()
      const split = [
        ...reader.push(text.slice(0, cut), false),
        ...reader.push(text.slice(cut), true),
      ]
      expect(split, `cut at ${cut}`).toEqual(whole)
    }
  })
})

describe('fingerprint hashes', () => {
  it('should compute SipHash-2-4 (the reference vector for 8 bytes)', () => {
    const k = new Int32Array([0x03020100, 0x07060504, 0x0b0a0908, 0x0f0e0d0c])
    // The paper's output bytes 62 24 93 9a 79 f5 f5 93 are 0x93f5f5799a932462; its low 52 bits:
    expect(sipHash52(k, 0x03020100, 0x07060504)).toBe(0x5f5799a932462)
  })

  it('should depend on the key, and stay below 2^52', async () => {
    const other = fingerprintKey(await contentSeed(await importCanaryKey('y'.repeat(32))))
    const a = new Shingler(key, { n: 3 }).push('one two three four', true)
    const b = new Shingler(other, { n: 3 }).push('one two three four', true)
    expect(a.map((s) => s.hash)).not.toEqual(b.map((s) => s.hash))
    for (const s of a)
      expect(Number.isInteger(s.hash) && s.hash >= 0 && s.hash < 2 ** 52).toBe(true)
  })

  it('should give no collision among 200k distinct shingles', () => {
    const text = english(5, 1_200_000)
    const hashes = new Set<number>()
    const seen = new Set<string>()
    const words = units(text).map((u) => u.text)
    const shingles = new Shingler(key, { n: 5 }).push(text, true)
    shingles.forEach((s, i) => {
      const gram = words.slice(i, i + 5).join(' ')
      if (seen.has(gram)) return
      seen.add(gram)
      hashes.add(s.hash)
    })
    expect(seen.size).toBeGreaterThan(150_000)
    expect(hashes.size).toBe(seen.size)
  })
})

describe('fingerprint shingler', () => {
  const show = (list: Shingle[]) => list.map((s) => `${s.hash}:${s.start}:${s.end}:${s.index}`)

  it('should shingle n consecutive units with their offsets', () => {
    const list = new Shingler(key, { n: 2 }).push('Alpha, beta gamma', true)
    expect(list.map((s) => [s.start, s.end, s.index])).toEqual([
      [0, 11, 0],
      [7, 17, 1],
    ])
    // Same units, other spelling: same hashes.
    const again = new Shingler(key, { n: 2 }).push('ALPHA beta\n\n**gamma**', true)
    expect(again.map((s) => s.hash)).toEqual(list.map((s) => s.hash))
  })

  it('should give the shingles of the whole text when split at every position', () => {
    const next = prng(99)
    const text = `${english(3, 300)} 東京 caf\\u00e9 \\ud83d\\ude00 ${english(4, 200)}`
    const whole = show(new Shingler(key, { n: 4 }).push(text, true))
    for (let cut = 0; cut <= text.length; cut++) {
      const s = new Shingler(key, { n: 4 })
      const split = [...s.push(text.slice(0, cut), false), ...s.push(text.slice(cut), true)]
      expect(show(split), `cut at ${cut}`).toEqual(whole)
    }
    // And in many random pieces.
    for (let trial = 0; trial < 50; trial++) {
      const s = new Shingler(key, { n: 4 })
      const out: Shingle[] = []
      let at = 0
      while (at < text.length) {
        const size = 1 + Math.floor(next() * 12)
        out.push(...s.push(text.slice(at, at + size), false))
        at += size
      }
      out.push(...s.push('', true))
      expect(show(out)).toEqual(whole)
    }
  })

  it('should count the fewest last units that weigh a weight as a scan of every remembered unit does', () => {
    // Words (6), Han characters (3) and Thai letters (2) mixed, pushed in pieces of 1 to 24 characters;
    // asked after every piece, mostly for one weight (the watch's), now and then for another.
    const rand = prng(11)
    const mixed = english(3, 6_000).replace(/ (\w+) /g, (all, word: string) =>
      word.length === 4 ? ' 人工知能 ' : word.length === 6 ? ' ภาษาไทย ' : all,
    )
    const reference = (s: Shingler, weight: number): number => {
      const remembered = Math.min(s.units, 40)
      for (let k = 1; k <= remembered; k++) {
        if (s.weightBefore(s.units)! - s.weightBefore(s.units - k)! >= weight) return k
      }
      return remembered + 1
    }
    const s = new Shingler(key, { n: 7, keepStarts: 40 })
    let asked = 0
    for (let at = 0; at < mixed.length; ) {
      const to = Math.min(mixed.length, at + 1 + Math.floor(rand() * 24))
      s.push(mixed.slice(at, to), to === mixed.length)
      at = to
      const weight = rand() < 0.1 ? 6 * Math.floor(1 + rand() * 40) : 174
      expect(s.unitsWeighing(weight)).toBe(reference(s, weight))
      asked++
    }
    expect(asked).toBeGreaterThan(400)
  })

  it('should say where the k-th last complete unit starts, and where open text starts', () => {
    const s = new Shingler(key, { n: 2, keepStarts: 3 })
    s.push('one two three fo', false)
    expect(s.unitStart(1)).toBe(8)
    expect(s.unitStart(3)).toBe(0)
    expect(s.unitStart(4)).toBeUndefined()
    expect(s.pendingStart()).toBe(14)
  })
})
