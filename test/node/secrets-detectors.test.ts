import { describe, expect, it } from 'vitest'
import {
  builtInDetectors,
  crc32,
  findSecrets,
  ibanRemainder,
  luhnValid,
  operatorDetector,
  patternProblem,
  type SecretDetector,
  validFodselsnummer,
  validPersonnummer,
} from '../../src/plugins/secrets'
import {
  ADVERSARIAL_UNITS,
  adversarialInput,
  GENERATORS,
  NEGATIVES,
  rng,
  WORST_ALLOWED_OPERATOR,
} from '../secrets/generate'

/**
 * The detectors one by one: the check digits against published vectors, every generated positive
 * found whole with its kind, every hard negative left alone, operator patterns refused when they
 * could backtrack, and each detector on 1 MB of input built against it.
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
 * The regex engine's own work cannot be counted from JavaScript, and wall-clock budgets flake on a
 * loaded machine, so the speed on these inputs is measured in bench/suites/secrets.ts (the
 * `adversarial` rows of bench/results/secrets.json). What is held here needs no clock: the candidate
 * patterns have only bounded quantifiers (so a start position costs a bounded number of steps, and a
 * scan is linear in the text), and on 1 MB of each input every detector finishes, finds exactly the
 * secrets the input holds by construction, and still finds a real one after it.
 */
describe('secret detectors on adversarial input', () => {
  const MB = 1 << 20
  const detectors = [...builtInDetectors(), operatorDetector(WORST_ALLOWED_OPERATOR)]

  it('should give every candidate pattern only bounded quantifiers', () => {
    const unbounded = detectors.flatMap((d) =>
      d.pattern ? unboundedQuantifiers(d.pattern.source).map((q) => `${d.kind}: ${q}`) : [],
    )
    expect(detectors.filter((d) => d.pattern).length).toBeGreaterThanOrEqual(15)
    expect(unbounded).toEqual([])
    // The scanner itself sees what it must.
    expect(unboundedQuantifiers('a+[+*]\\*b*c{2,}d{2,3}')).toEqual([
      '+ at 1',
      '* at 9',
      '{2,} at 11',
    ])
  })

  /**
   * Inputs that are secrets by construction: alg-none JWTs (header, payload, and the next header as a
   * signature: a third of the units), `a://a:a@a…` URL passwords (every unit but the last, which ends
   * the input), one card among the 4242 groups, and the worst operator pattern's matches in `xoxb-1-`.
   */
  const inInput: Record<string, number> = {
    'jwt eyJhbGciOiJub25lIn0.': Math.floor(MB / 20 / 3),
    'url-password a://a:a@': MB / 8 - 1,
    'card-number 4242 ': 1,
    'worst-allowed xoxb-1-': 149_797,
  }

  for (const detector of detectors) {
    it(`should finish 1 MB of each adversarial input, finding its secrets and one after it: ${detector.kind} (${detector.confidence})`, () => {
      const planted = plantedLine(detector)
      const found: Record<string, number> = {}
      for (const unit of ADVERSARIAL_UNITS) {
        const input = adversarialInput(unit, MB)
        const spans = detector.find(`${input}\n${planted.line}`)
        const last = spans.at(-1)
        const shift = input.length + 1
        expect(last && { ...last, start: last.start - shift, end: last.end - shift }, unit).toEqual(
          {
            kind: detector.kind,
            start: planted.start,
            end: planted.end,
          },
        )
        if (spans.length > 1) found[`${detector.kind} ${unit}`] = spans.length - 1
      }
      const expected = Object.entries(inInput).filter(([key]) =>
        key.startsWith(`${detector.kind} `),
      )
      expect(found).toEqual(Object.fromEntries(expected))
    })
  }
})

/** A line holding one secret `detector` finds alone, and where in the line it is. */
function plantedLine(detector: SecretDetector): { line: string; start: number; end: number } {
  if (detector.kind === WORST_ALLOWED_OPERATOR.name) {
    return { line: 'build 1 of abc123x done', start: 11, end: 18 }
  }
  for (const [name, generate] of Object.entries(GENERATORS)) {
    const { value, line } = generate(rng(name.length))
    const text = line.replace('$', value)
    const start = line.indexOf('$')
    const spans = detector.find(text)
    if (spans.length === 1 && spans[0]!.start === start) {
      return { line: text, start, end: spans[0]!.end }
    }
  }
  throw new Error(`no generator makes a secret ${detector.kind} finds`)
}

/**
 * The unbounded quantifiers of a regex source (`*`, `+`, `{n,}`), outside character classes and
 * escapes: where one start position may cost steps without bound.
 */
function unboundedQuantifiers(source: string): string[] {
  const found: string[] = []
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!
    if (c === '\\') {
      i++
    } else if (c === '[') {
      for (i++; i < source.length && source[i] !== ']'; i++) if (source[i] === '\\') i++
    } else if (c === '*' || c === '+') {
      found.push(`${c} at ${i}`)
    } else if (c === '{') {
      const open = /^\{\d+,\}/.exec(source.slice(i))
      if (open) found.push(`${open[0]} at ${i}`)
    }
  }
  return found
}
