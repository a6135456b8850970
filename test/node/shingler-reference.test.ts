/**
 * The incremental shingler against the definition, over real text: every run of n units of the whole
 * text, each unit's lanes hashed from its normalised text, the n lanes combined as a polynomial in
 * the roll multipliers (mod 2^32), finished by `shingleHash`; its offsets the first unit's start and
 * the last unit's end. The text is pushed in pieces cut anywhere (inside words, surrogate pairs and
 * JSON escapes). Real text: the repository's bench prose, mixed-script samples, and where the machine
 * has them, Go, Rust and Python sources and Chinese, Japanese and Korean manual pages.
 */
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import { beforeAll, describe, expect, it } from 'vitest'
import { english } from '../../bench/texts'
import { prng } from '../../sim/random'
import { contentSeed, importCanaryKey } from '../../src/core/canary'
import {
  type FingerprintKey,
  fingerprintKey,
  rollPower,
  shingleHash,
  unitLanes,
} from '../../src/plugins/foreign-content/hash'
import { Shingler } from '../../src/plugins/foreign-content/shingler'
import { units } from '../../src/plugins/foreign-content/units'

interface NodeFs {
  existsSync(path: string): boolean
  readdirSync(path: string, options: { recursive: true }): string[]
  readFileSync(path: string): Uint8Array
}
const fs = (await import('node:fs' as string)) as NodeFs

let key: FingerprintKey
beforeAll(async () => {
  key = fingerprintKey(await contentSeed(await importCanaryKey('x'.repeat(32))))
})

type Row = [hash: number, start: number, end: number, index: number]

/** The shingles of a whole text by the definition (no rolling, no ring buffers). */
function reference(text: string, n: number): Row[] {
  const all = units(text)
  const lanes = new Int32Array(2)
  const a: number[] = []
  const b: number[] = []
  for (const unit of all) {
    unitLanes(key, { text: unit.text, from: 0, to: unit.text.length, fold: false }, lanes)
    a.push(lanes[0]!)
    b.push(lanes[1]!)
  }
  const rows: Row[] = []
  for (let i = 0; i + n <= all.length; i++) {
    let sumA = 0
    let sumB = 0
    for (let j = 0; j < n; j++) {
      sumA = (sumA + Math.imul(a[i + j]!, rollPower(key.rollA, n - 1 - j))) | 0
      sumB = (sumB + Math.imul(b[i + j]!, rollPower(key.rollB, n - 1 - j))) | 0
    }
    rows.push([shingleHash(key, sumA, sumB), all[i]!.start, all[i + n - 1]!.end, i])
  }
  return rows
}

/** The shingler's shingles of the text pushed in pieces of 1 to `most` characters. */
function streamed(text: string, n: number, seed: number, most: number): Row[] {
  const rand = prng(seed)
  const shingler = new Shingler(key, { n, keepStarts: 3 })
  const rows: Row[] = []
  const sink = (hash: number, start: number, end: number, index: number) =>
    rows.push([hash, start, end, index])
  for (let at = 0; at < text.length; ) {
    const to = Math.min(text.length, at + 1 + Math.floor(rand() * most))
    shingler.read(text.slice(at, to), false, sink)
    at = to
  }
  shingler.read('', true, sink)
  return rows
}

/** Up to `count` files under `dir` whose names end with `suffix`, read (gunzipped when `.gz`). */
function files(dir: string, suffix: string, count: number): string[] {
  if (!fs.existsSync(dir)) return []
  const names = fs
    .readdirSync(dir, { recursive: true })
    .filter((name) => name.endsWith(suffix))
    .sort()
    .slice(0, count)
  return names.map((name) => {
    const raw = fs.readFileSync(join(dir, name))
    return new TextDecoder().decode(suffix.endsWith('.gz') ? gunzipSync(raw) : raw)
  })
}

const samples = (): [string, string][] => [
  ['english', english(9, 20_000)],
  [
    'mixed',
    `${english(2, 3_000)} 人工知能の研究は進んでいる。ภาษาไทยเป็นภาษา Ｆｕｌｌ ｗｉｄｔｈ 한국어 문장 😀 e\u0301`,
  ],
  [
    'json',
    JSON.stringify({
      a: `say "hi"\n\tcafé ${english(4, 2_000)}`,
      b: '\\u00e9t\\u00e9 \\ud83d\\ude00',
    }),
  ],
  ...files('/usr/share/doc/git/contrib', '.go', 6).map((t, i): [string, string] => [`go ${i}`, t]),
  ...files('/usr/share/doc/python3-yaml', '.py', 6).map((t, i): [string, string] => [`py ${i}`, t]),
  ...files('/usr/src', '.rs', 6).map((t, i): [string, string] => [`rust ${i}`, t]),
  ...['ja', 'zh_CN', 'ko'].flatMap((lang) =>
    files(`/usr/share/man/${lang}`, '.gz', 4).map((t, i): [string, string] => [`${lang} ${i}`, t]),
  ),
]

describe('shingler against the definition', () => {
  it('gives every shingle of the whole text, whatever the pieces', () => {
    let compared = 0
    for (const [name, text] of samples()) {
      for (const n of [1, 3, 7]) {
        const expected = reference(text, n)
        for (const most of [3, 40]) {
          const got = streamed(text, n, compared + 1, most)
          expect(got.length, name).toBe(expected.length)
          expect(got, name).toEqual(expected)
          compared += got.length
        }
      }
    }
    expect(compared).toBeGreaterThan(10_000)
  })
})
