/**
 * @module The live guard on honest traffic from families of real text it was never tuned on
 * (test/held-apart/corpus.ts, evaluation split: Debian's Perl, Tcl and Vim sources, Vim's help, six
 * licences, manual pages in English and seven more languages), three seeds of 2,000 honest answers,
 * about a third reciting a text one other tenant pasted within the hour: at most 0.1% withheld, no
 * stream broken after its text started, every control that quotes another tenant's private text
 * withheld with nothing of the quote delivered. Against the same traffic with the second opinion off,
 * the recitals are withheld: the figure is the mechanism's. The two splits share no family.
 */
import { describe, expect, it } from 'vitest'
import { PUBLIC_BACKGROUND } from '../../src/plugins/foreign-content'
import { PUBLIC_UDHR } from '../../src/plugins/foreign-content/public-udhr'
import { CORPUS_PACKAGES, heldApartFamilies, sevens, tuningFamilies } from '../held-apart/corpus'
import { replayHeldApart } from '../held-apart/replay'
import { heldApartTraffic } from '../held-apart/traffic'

const families = heldApartFamilies()

describe('held-apart honest traffic through one guard', () => {
  it('should read every family of the corpus (the packages .ci/run installs)', () => {
    expect(families.map((f) => f.name).length, `install: ${CORPUS_PACKAGES.join(' ')}`).toBe(13)
  })

  it('should share no family, and no piece, with the split the second opinion was tuned on', () => {
    const tuning = tuningFamilies()
    const names = new Set(tuning.map((f) => f.name))
    expect(families.filter((f) => names.has(f.name))).toEqual([])
    const tuned = new Set(tuning.flatMap((f) => f.pieces.map((p) => p.text)))
    expect(families.flatMap((f) => f.pieces).filter((p) => tuned.has(p.text))).toEqual([])
    // Nor seven words in a row with the built-in public texts (the tuned licences, the UDHR).
    const builtIn = new Set([...PUBLIC_BACKGROUND, ...PUBLIC_UDHR].flatMap(sevens))
    const shared = families
      .flatMap((f) => f.pieces)
      .filter((p) => sevens(p.text).some((s) => builtIn.has(s)))
    expect(shared.map((p) => p.title)).toEqual([])
  })

  // The Swedish pages come with dpkg, apt and passwd, the German ones with manpages-de: on a machine
  // without them there is nothing to read.
  const sv = families.find((f) => f.name === 'man-sv')
  const de = tuningFamilies().find((f) => f.name === 'man-de')
  it.skipIf(!sv || !de)(
    'should keep the letters of Swedish and German manual pages: roff escapes decoded, none left',
    () => {
      const swedish = sv!.pieces.map((p) => p.text).join('\n')
      const german = de!.pieces.map((p) => p.text).join('\n')
      expect(swedish).toMatch(/(?<!\p{L})användare(?!\p{L})/u)
      expect(swedish.match(/[åäöÅÄÖ]/g)?.length ?? 0).toBeGreaterThan(1000)
      expect(german).toMatch(/(?<!\p{L})für(?!\p{L})/u)
      expect(german.match(/[äöüÄÖÜß]/g)?.length ?? 0).toBeGreaterThan(1000)
      // Neither a glyph escape nor a word with its letter dropped ("anvndare", "ndert").
      for (const text of [swedish, german]) {
        expect(text).not.toMatch(/\\\([:'`^~,o][A-Za-z]|\\\[u[0-9A-F]{4}/)
        expect(text).not.toMatch(/(?<!\p{L})(?:anvndare|ndert)(?!\p{L})/u)
      }
    },
  )

  // Controls per seed vary with the corpus (a quote must be private, unknown to the model and 24
  // shingles long): each seed must replay enough to mean something, the three together ≥ 90.
  let controls = 0
  for (const seed of [1, 2, 3]) {
    it(`should withhold ≤ 0.1% of 2,000 honest answers, break no stream and withhold every control (seed ${seed})`, async () => {
      const result = await replayHeldApart(heldApartTraffic(families, { count: 2_000, seed }))
      expect(result.recitals).toBeGreaterThan(600)
      expect(result.withheld.length).toBeLessThanOrEqual(2)
      expect(result.brokenAfterText).toBe(0)
      controls += result.controls.total
      expect(result.controls.total).toBeGreaterThanOrEqual(25)
      expect(result.controls.withheld).toBe(result.controls.total)
      expect(result.controls.quoteEscaped).toBe(0)
    }, 120_000)
  }

  it('should have replayed at least 90 controls over the three seeds', () => {
    expect(controls).toBeGreaterThanOrEqual(90)
  })

  it('should withhold the recitals without the second opinion (the traffic is a real test of it)', async () => {
    const traffic = heldApartTraffic(families, { count: 500, seed: 4 })
    const off = await replayHeldApart(traffic, { guard: { content: { recall: false } } })
    expect(off.withheld.length).toBeGreaterThan(off.recitals / 4)
    expect(off.controls.withheld).toBe(off.controls.total)
  }, 120_000)
})
