import { describe, expect, it } from 'vitest'
import {
  addClassBytes,
  LONE_SURROGATE,
  pieceFacts,
  SCRIPT_CLASS_NAMES,
  SCRIPT_CLASSES,
  scriptClassOf,
} from '../../src/ceiling/script'
import { utf8Length } from '../../src/ceiling/utf8'
import { randomCodePoints, randomUnicode, rng } from './gen'

describe('script classes', () => {
  it('should be a fixed list of at most 32 names, each with a human name', () => {
    expect(SCRIPT_CLASSES.length).toBeLessThanOrEqual(32)
    expect(new Set(SCRIPT_CLASSES).size).toBe(SCRIPT_CLASSES.length)
    for (const name of SCRIPT_CLASSES) expect(SCRIPT_CLASS_NAMES[name]).toBeTruthy()
  })

  it('should classify o200k pieces by their script', () => {
    const cases: [string, string][] = [
      [' the', 'latin'],
      [' Ærlig', 'latin-ext'],
      [' thường', 'latin-ext'],
      ['123', 'digits'],
      ['\n\n', 'whitespace'],
      [' {', 'symbols'],
      [' Привет', 'cyrillic'],
      [' Ωμέγα', 'greek'],
      [' Հայերեն', 'armenian'],
      [' ქართული', 'georgian'],
      [' שלום', 'hebrew'],
      [' مرحبا', 'arabic'],
      [' नमस्ते', 'devanagari'],
      [' বাংলা', 'bengali'],
      [' ਪੰਜਾਬੀ', 'gurmukhi'],
      [' ગુજરાતી', 'gujarati'],
      [' ଓଡ଼ିଆ', 'oriya'],
      [' தமிழ்', 'tamil'],
      [' తెలుగు', 'telugu'],
      [' ಕನ್ನಡ', 'kannada'],
      [' മലയാളം', 'malayalam'],
      [' සිංහල', 'sinhala'],
      ['ภาษาไทย', 'thai'],
      ['ພາສາລາວ', 'lao'],
      ['བོད་', 'tibetan'],
      ['မြန်မာ', 'myanmar'],
      ['ខ្មែរ', 'khmer'],
      ['አማርኛ', 'ethiopic'],
      ['中文', 'han'],
      ['𠀀', 'han'],
      ['ひらがなカタカナ', 'kana'],
      [' 한국어', 'hangul'],
      ['👩‍👩‍👧', 'emoji'],
      ['🇳🇴', 'emoji'],
      ['ܫܠܡܐ', 'other'],
    ]
    for (const [piece, expected] of cases)
      expect([piece, scriptClassOf(piece)]).toEqual([piece, expected])
  })

  it("should let a script's letters outrank Latin in a mixed piece (only ever stricter)", () => {
    expect(scriptClassOf('abcქ')).toBe('georgian')
    expect(scriptClassOf('1a')).toBe('latin')
  })

  it('should flag lone surrogates and only them', () => {
    expect(pieceFacts('\ud835') & LONE_SURROGATE).toBe(LONE_SURROGATE)
    expect(pieceFacts('x\udc00') & LONE_SURROGATE).toBe(LONE_SURROGATE)
    expect(pieceFacts('😀') & LONE_SURROGATE).toBe(0)
  })

  it('should split UTF-8 bytes by class, summing to utf8Length (property over random Unicode)', () => {
    const next = rng(41)
    for (let i = 0; i < 300; i++) {
      const text = i % 2 ? randomUnicode(next, 40) : randomCodePoints(next, 40)
      const totals = new Float64Array(SCRIPT_CLASSES.length)
      addClassBytes(text, totals)
      expect(totals.reduce((a, b) => a + b, 0)).toBe(utf8Length(text))
    }
  })
})
