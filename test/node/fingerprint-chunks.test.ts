/**
 * Every value the FingerprintLog stores fits production's limits, for any prompt the guard admits: a
 * property over scripts and unit densities (one-letter words, a unit per two characters, to English
 * prose, Han and Thai at a unit per character), printed for real up to past the densest admissible
 * prompt, each batch chunked as the log chunks it and each row checked as production would check it.
 */
import fc from 'fast-check'
import { beforeAll, describe, expect, it } from 'vitest'
import { english } from '../../bench/texts'
import { prng } from '../../sim/random'
import { contentSeed, importCanaryKey } from '../../src/core/canary'
import {
  FINGERPRINT_DEFAULTS,
  type FingerprintKey,
  fingerprintKey,
  printPrompt,
} from '../../src/plugins/foreign-content'
import { CHUNK_HASHES, chunkBatch, INSERT, joinChunks } from '../../src/worker/fingerprint-chunks'
import { limitedSql, SAFE_VALUE_BYTES } from '../../src/worker/platform-limits'

/**
 * Production's largest value or row, bytes: D1 and Durable Objects' SQLite refuse more (the figure
 * src/worker/platform-limits.ts states and its wrappers enforce).
 */
const MAX_VALUE_BYTES = 2_000_000

/**
 * Production's checks without a database: the FingerprintLog's own `limitedSql` wrapper over a storage
 * that runs nothing, so `exec` throws exactly where production would refuse the statement.
 */
const limits = limitedSql({ exec: () => undefined } as unknown as Parameters<typeof limitedSql>[0])

let key: FingerprintKey
beforeAll(async () => {
  key = fingerprintKey(await contentSeed(await importCanaryKey('x'.repeat(32))))
})

/** The glm-5.3 ceiling's order (677,184 tokens): no admissible prompt has more units than this. */
const MAX_UNITS = 700_000

/** `units` units of a script, each unit `width` characters wide where the script has words. */
function text(script: string, seed: number, units: number, width: number): string {
  const random = prng(seed)
  const pick = (alphabet: string) => alphabet[Math.floor(random() * alphabet.length)]!
  const out: string[] = []
  switch (script) {
    case 'latin-words':
      for (let i = 0; i < units; i++) {
        let word = ''
        for (let c = 0; c < width; c++) word += pick('abcdefghijklmnopqrstuvwxyz')
        out.push(word)
      }
      return out.join(' ')
    case 'english':
      return english(seed, units * 6)
    case 'han':
      for (let i = 0; i < units; i++)
        out.push(String.fromCodePoint(0x4e00 + Math.floor(random() * 20_000)))
      return out.join('')
    default:
      for (let i = 0; i < units; i++)
        out.push(String.fromCodePoint(0x0e01 + Math.floor(random() * 46)))
      return out.join('')
  }
}

describe('FingerprintLog chunks', () => {
  it('should check rows as production does: a BLOB over the limit is refused', () => {
    // Else the property below, which stores through these checks, could pass without checking.
    const blob = (bytes: number) => ['t', 1, 1, new ArrayBuffer(bytes), 1]
    expect(() => limits.exec(INSERT, ...blob(MAX_VALUE_BYTES + 1))).toThrow(/SQLITE_TOOBIG/)
    expect(() => limits.exec(INSERT, ...blob(MAX_VALUE_BYTES - 10))).toThrow(/row too big/)
    limits.exec(INSERT, ...blob(SAFE_VALUE_BYTES))
  })

  it('should keep every stored row under the limits, for any script and unit density', () => {
    let largest = 0
    fc.assert(
      fc.property(
        fc.constantFrom('latin-words', 'english', 'han', 'thai'),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: MAX_UNITS }),
        fc.integer(),
        (script, width, units, seed) => {
          const selected = printPrompt(
            key,
            [text(script, seed, units, width)],
            FINGERPRINT_DEFAULTS,
          ).selected
          largest = Math.max(largest, selected.length * 8)
          const chunks = chunkBatch(Float64Array.from(selected).buffer)
          // The longest tenant id the table takes, in 4-byte characters: the row's other columns.
          const tenant = '𝒯'.repeat(512)
          for (const chunk of chunks) {
            expect(chunk.hashes.byteLength).toBeLessThanOrEqual(SAFE_VALUE_BYTES)
            limits.exec(INSERT, tenant, Date.now(), chunk.count, chunk.hashes, 1)
          }
          const rows = chunks.map((c) => ({
            tenant: 't',
            at: 1,
            hashes: c.hashes,
            ...(c.last ? {} : { more: true as const }),
          }))
          const joined = joinChunks('m', rows)
          expect(joined).toHaveLength(selected.length === 0 ? 0 : 1)
          if (selected.length > 0) expect(joined[0]!.hashes).toEqual(selected)
        },
      ),
      {
        numRuns: 25,
        // The densest corner always: one-letter words at the ceiling (2,102,984 B of fingerprints).
        examples: [['latin-words', 1, MAX_UNITS, 7]],
      },
    )
    // The property covered prompts whose fingerprints, unchunked, production would have refused.
    expect(largest).toBeGreaterThan(MAX_VALUE_BYTES)
  }, 120_000)

  it('should cut at exactly 1 MiB and mark only the last row', () => {
    const chunks = chunkBatch(new Float64Array(CHUNK_HASHES * 2 + 1).buffer)
    expect(chunks.map((c) => [c.count, c.last])).toEqual([
      [CHUNK_HASHES, false],
      [CHUNK_HASHES, false],
      [1, true],
    ])
    expect(chunkBatch(new ArrayBuffer(0))).toEqual([])
  })
})
