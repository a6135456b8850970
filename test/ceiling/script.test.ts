import { describe, expect, it } from 'vitest'
import {
  addClassBytes,
  CLASS_MASK,
  LONE_SURROGATE,
  NFC_STABLE_BELOW,
  nfcForm,
  pieceFacts,
  SCRIPT_CLASS_NAMES,
  SCRIPT_CLASSES,
  type ScriptClass,
} from '../../src/core/ceiling/script'
import { utf8Length } from '../../src/core/ceiling/utf8'
import { mixedTexts } from './gen'

/** The class of one o200k piece, as the ceiling's scan reads it (estimate.ts). */
function classOf(piece: string): ScriptClass | undefined {
  return SCRIPT_CLASSES[pieceFacts(piece) & CLASS_MASK]
}

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
      expect([piece, classOf(piece)]).toEqual([piece, expected])
  })

  it("should let a script's letters outrank Latin in a mixed piece (only ever stricter)", () => {
    expect(classOf('abcქ')).toBe('georgian')
    expect(classOf('1a')).toBe('latin')
  })

  it('should flag lone surrogates and only them', () => {
    expect(pieceFacts('\ud835') & LONE_SURROGATE).toBe(LONE_SURROGATE)
    expect(pieceFacts('x\udc00') & LONE_SURROGATE).toBe(LONE_SURROGATE)
    expect(pieceFacts('😀') & LONE_SURROGATE).toBe(0)
  })

  it('should split UTF-8 bytes by class, summing to utf8Length (property over random Unicode)', () => {
    for (const text of mixedTexts(41, 300, 40)) {
      const totals = new Float64Array(SCRIPT_CLASSES.length)
      addClassBytes(text, totals)
      expect(totals.reduce((a, b) => a + b, 0)).toBe(utf8Length(text))
    }
  })

  it("should give each character's bytes to its own class, ASCII tallied or not (property)", () => {
    for (const text of mixedTexts(43, 200, 60)) {
      const whole = new Float64Array(SCRIPT_CLASSES.length)
      addClassBytes(text, whole)
      // One call per code point (a lone surrogate is its own), each with no ASCII run to tally.
      const single = new Float64Array(SCRIPT_CLASSES.length)
      for (const char of text) addClassBytes(char, single)
      expect([...whole]).toEqual([...single])
    }
    const totals = new Float64Array(SCRIPT_CLASSES.length)
    addClassBytes('Hei 12ქ', totals)
    expect(totals[SCRIPT_CLASSES.indexOf('latin')]).toBe(3)
    expect(totals[SCRIPT_CLASSES.indexOf('digits')]).toBe(2)
    expect(totals[SCRIPT_CLASSES.indexOf('whitespace')]).toBe(1)
    expect(totals[SCRIPT_CLASSES.indexOf('georgian')]).toBe(3)
  })

  it('should return the highest unit outside ASCII, so NFC is skipped only where it cannot change', () => {
    for (const text of mixedTexts(47, 300, 40)) {
      const highest = addClassBytes(text, new Float64Array(SCRIPT_CLASSES.length))
      expect(highest >= NFC_STABLE_BELOW).toBe(/[\u0300-\uffff]/.test(text))
    }
    expect(addClassBytes('plain', new Float64Array(SCRIPT_CLASSES.length))).toBe(0)
    expect(addClassBytes('été', new Float64Array(SCRIPT_CLASSES.length))).toBe(0xe9)
    expect(addClassBytes('e\u0301', new Float64Array(SCRIPT_CLASSES.length))).toBe(0x301)
  })

  it('should hold the NFC shortcut: every text of units below U+0300 is its own NFC form', () => {
    // NFC changes a character, or composes it with the one before, only from U+0300 up: checking
    // every character and every pair below it covers all compositions (they are pairwise).
    const changed: string[] = []
    for (let a = 0; a < NFC_STABLE_BELOW; a++) {
      const first = String.fromCharCode(a)
      if (first.normalize('NFC') !== first) changed.push(first)
      for (let b = 0; b < NFC_STABLE_BELOW; b++) {
        const pair = first + String.fromCharCode(b)
        if (pair.normalize('NFC') !== pair) changed.push(pair)
      }
    }
    expect(changed).toEqual([])
    // Just above: the combining grave composes with the letter before it.
    expect('e\u0300'.normalize('NFC')).toBe('è')
  })

  it('should give the NFC form, normalizing only text that can change (property)', () => {
    for (const text of mixedTexts(53, 300, 40)) {
      expect(nfcForm(text)).toBe(text.normalize('NFC'))
    }
    expect(nfcForm('Cafe\u0301')).toBe('Caf\u00e9')
    expect(nfcForm('\u{1d160}')).toBe('\u{1d158}\u{1d165}\u{1d16e}')
  })
})
