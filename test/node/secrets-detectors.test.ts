import { describe, expect, it } from 'vitest'
import {
  builtInDetectors,
  crc32,
  findSecrets,
  ibanRemainder,
  luhnValid,
  operatorDetector,
  patternProblem,
  validFodselsnummer,
  validPersonnummer,
} from '../../src/plugins/secrets'
import { GENERATORS, NEGATIVES, rng } from '../secrets/generate'

/**
 * The detectors one by one: the check digits against published vectors, every generated positive
 * found whole with its kind, every hard negative left alone, operator patterns refused when they
 * could backtrack, and each detector's time on 1 MB of input built against it.
 */
describe('secret checksums', () => {
  it('should match published vectors', () => {
    expect(crc32('123456789')).toBe(0xcbf43926)
    expect(luhnValid('4242 4242 4242 4242')).toBe(true)
    expect(luhnValid('4242 4242 4242 4241')).toBe(false)
    expect(ibanRemainder('GB82 WEST 1234 5698 7654 32')).toBe(1)
    expect(ibanRemainder('NO93 8601 1117 947')).toBe(1)
    expect(validPersonnummer('811218-9876')).toBe(true)
    expect(validPersonnummer('811218-9877')).toBe(false)
    expect(validFodselsnummer('31029912345')).toBe(false)
  })
})

describe('secret detectors', () => {
  const detectors = builtInDetectors()

  for (const [name, generate] of Object.entries(GENERATORS)) {
    it(`should find every generated ${name} whole, in its line`, () => {
      const r = rng(name.length * 7919)
      for (let i = 0; i < 200; i++) {
        const { kind, value, line } = generate(r)
        const text = line.replace('$', value)
        const start = line.indexOf('$')
        expect(findSecrets(text, detectors), `${kind}: ${text}`).toEqual([
          { kind, start, end: start + value.length },
        ])
      }
    })
  }

  for (const [name, generate] of Object.entries(NEGATIVES)) {
    it(`should find nothing in ${name}`, () => {
      const r = rng(name.length * 104729)
      for (let i = 0; i < 200; i++) {
        const text = generate(r)
        expect(findSecrets(text, detectors), text).toEqual([])
      }
    })
  }
})

describe('operator patterns', () => {
  it('should accept bounded patterns and find their matches', () => {
    const acme = operatorDetector({
      name: 'acme-account',
      pattern: 'ACME-[0-9]{8}(?:-[A-Z]{2,4})?',
    })
    expect(acme.confidence).toBe('medium')
    expect(acme.find('x ACME-12345678-QW y')).toEqual([{ kind: 'acme-account', start: 2, end: 18 }])
  })

  it('should refuse every pattern that could backtrack, naming the reason', () => {
    const refused: Record<string, RegExp> = {
      '(a+)+b': /unbounded/,
      '\\w+x': /unbounded/,
      'a*': /unbounded/,
      'a{2,}': /unbounded/,
      '(a|ab){0,9}c': /quantified group/,
      '(?:[a-z]{1,5}){1,5}': /quantified group/,
      '(a)\\1': /backreference/,
      '(?<n>a)\\k<n>': /backreference/,
      '(?=a)b': /look-around/,
      '(?<!a)b': /look-around/,
      'a{1,300}': /bound over 256/,
      '[a-z]{1,200}[0-9]{1,200}': /ways to try/,
      'a?': /empty string/,
      '(a': /unbalanced/,
      [`${'a'.repeat(257)}`]: /length/,
    }
    for (const [pattern, reason] of Object.entries(refused)) {
      expect(() => operatorDetector({ name: 'x-y', pattern }), pattern).toThrow(reason)
    }
    expect(() => operatorDetector({ name: 'Bad Name', pattern: 'a' })).toThrow(/name/)
    expect(() => operatorDetector({ name: 'ok', pattern: 'a', flags: 'g' })).toThrow(/flags/)
    expect(patternProblem('ACME-[0-9]{8}')).toBeUndefined()
  })
})

/**
 * Inputs built against the detectors: long runs of each format's alphabet after each prefix, with
 * and without separators, repeated headers with no END, digits with every separator. A detector that
 * backtracks (quadratic or worse) takes minutes on 1 MB; a linear one milliseconds. The budget is
 * generous (a loaded 2-core machine): it tells the two apart, it does not benchmark.
 */
describe('secret detectors on adversarial input', () => {
  const MB = 1 << 20
  const units = [
    'a',
    'A',
    '1',
    '1 ',
    '1-',
    '12 ',
    'sk-',
    'sk-proj-',
    'sk-ant-api03-',
    'ghp_',
    'github_pat_',
    'xoxb-1-',
    'AIza',
    'AKIA',
    'aws ',
    'Aa1',
    'Aa1_',
    'Aa1/',
    'eyJ',
    'eyJhbGciOiJub25lIn0.',
    'a.',
    'a://a:a@',
    '://:',
    '-----BEGIN PRIVATE KEY-----\n',
    'GB82 ',
    'GB82',
    'NO93 8601 ',
    '811218-',
    '0101',
    '123-45-',
    '4242 ',
    'cloudflare ',
  ]
  const inputs = units.map((unit) => ({
    unit,
    text: unit.repeat(Math.ceil(MB / unit.length)).slice(0, MB),
  }))

  for (const detector of [
    ...builtInDetectors(),
    operatorDetector({ name: 'worst-allowed', pattern: '[a-z]{1,8}[a-z0-9]{1,16}x' }),
  ]) {
    it(`should scan 1 MB of each adversarial input quickly: ${detector.kind} (${detector.confidence})`, () => {
      let worst = 0
      let worstUnit = ''
      for (const { unit, text } of inputs) {
        const start = performance.now()
        detector.find(text)
        const ms = performance.now() - start
        if (ms > worst) [worst, worstUnit] = [ms, unit]
      }
      expect(worst, `slowest on ${JSON.stringify(worstUnit)}`).toBeLessThan(3000)
    })
  }
})
