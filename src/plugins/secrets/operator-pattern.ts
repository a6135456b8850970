/**
 * @module Operator-supplied secret patterns, validated once at construction so that no pattern can
 * make a scan super-linear. JavaScript regexes backtrack: `(a+)+b`, `\w+x` on a long run of letters
 * or `(a|ab)*c` take time polynomial or exponential in the text. The rule, checked on the pattern's
 * source in one pass:
 * - at most 256 characters, flags among `i`, `m`, `s`, `u` only;
 * - no backreferences (`\1`, `\k<name>`) and no look-arounds (they re-read text);
 * - every quantifier bounded: `*`, `+` and `{n,}` are refused, `{n,m}` needs m ≤ 256;
 * - no repetition of a group that holds a quantifier or an alternation (`(a|ab){0,9}`, `(a{1,3}){2}`);
 *   an optional one (`(?:-[A-Z]{2,4})?`) is allowed;
 * - the product over all quantifiers of (max − min + 1) is at most 128: about the most ways one
 *   start position can be tried, so a scan costs at most ~128 steps per character of text (1 MB of
 *   the worst text such a pattern allows scans in about a second; 4,096 took 33 s);
 * - it must not match the empty string.
 */
import type { OperatorPattern } from '../../core'
import { regexDetector, type SecretDetector } from './detector'

export type { OperatorPattern } from '../../core'

/**
 * The bounds of the rule (see the module comment).
 *
 * @example
 * pattern.length <= OPERATOR_PATTERN_LIMITS.sourceLength
 */
export const OPERATOR_PATTERN_LIMITS = {
  sourceLength: 256,
  quantifierMax: 256,
  workPerPosition: 128,
} as const

interface Scan {
  /** Per open group: whether it holds a quantifier or an alternation. */
  groups: { complex: boolean }[]
  /** Whether the last atom was a group that holds a quantifier or an alternation. */
  lastComplex: boolean
  work: number
}

/**
 * Why `source` breaks the rule, or undefined when it passes.
 *
 * @example
 * patternProblem('(a+)+b') // 'unbounded quantifier "+" at 2'
 */
export function patternProblem(source: string): string | undefined {
  if (source.length === 0 || source.length > OPERATOR_PATTERN_LIMITS.sourceLength) {
    return `length must be 1 to ${OPERATOR_PATTERN_LIMITS.sourceLength}`
  }
  const scan: Scan = { groups: [{ complex: false }], lastComplex: false, work: 1 }
  let i = 0
  while (i < source.length) {
    const c = source[i]!
    const problem = step(source, i, c, scan)
    if (typeof problem === 'string') return problem
    i = problem
  }
  if (scan.groups.length !== 1) return 'unbalanced parentheses'
  return undefined
}

/** One token of the source: the index after it, or why the pattern is refused. */
function step(source: string, i: number, c: string, scan: Scan): number | string {
  const top = scan.groups[scan.groups.length - 1]!
  if (c === '\\') {
    const next = source[i + 1] ?? ''
    if (/[1-9]/.test(next) || next === 'k') return `backreference at ${i}`
    scan.lastComplex = false
    return i + 2
  }
  if (c === '[') {
    let j = i + 1
    while (j < source.length && source[j] !== ']') j += source[j] === '\\' ? 2 : 1
    scan.lastComplex = false
    return j + 1
  }
  if (c === '(') {
    if (/^\(\?<?[=!]/.test(source.slice(i, i + 4))) return `look-around at ${i}`
    scan.groups.push({ complex: false })
    scan.lastComplex = false
    const named = /^\(\?(?::|<[A-Za-z_]\w*>)/.exec(source.slice(i, i + 40))
    return i + (named ? named[0].length : 1)
  }
  if (c === ')') {
    const group = scan.groups.pop()
    if (group === undefined || scan.groups.length === 0) return `unbalanced ) at ${i}`
    scan.lastComplex = group.complex
    if (group.complex) scan.groups[scan.groups.length - 1]!.complex = true
    return i + 1
  }
  if (c === '|') {
    top.complex = true
    return i + 1
  }
  if (c === '*' || c === '+') return `unbounded quantifier "${c}" at ${i}`
  if (c === '?' || c === '{') return quantifier(source, i, scan, top)
  scan.lastComplex = false
  return i + 1
}

/** The quantifier at `source[i]` (`?` or `{m,n}`): the next position, or what is wrong with it. */
function quantifier(
  source: string,
  i: number,
  scan: Scan,
  top: { complex: boolean },
): number | string {
  const c = source[i]
  let min = 0
  let max = 1
  let end = i + 1
  if (c === '{') {
    const m = /^\{(\d{1,4})(?:(,)(\d{0,4}))?\}/.exec(source.slice(i, i + 12))
    if (!m) return `bad quantifier at ${i}`
    min = Number(m[1])
    if (m[2] && m[3] === '') return `unbounded quantifier "{n,}" at ${i}`
    max = m[3] ? Number(m[3]) : min
    if (max < min || max > OPERATOR_PATTERN_LIMITS.quantifierMax) {
      return `quantifier bound over ${OPERATOR_PATTERN_LIMITS.quantifierMax} at ${i}`
    }
    end = i + m[0].length
  }
  // An optional group (`(?:-[A-Z]{2,4})?`) is tried at most twice; a repeated one multiplies.
  if (scan.lastComplex && max > 1) {
    return `quantified group holding a quantifier or alternation at ${i}`
  }
  if (source[end] === '?') end++ // lazy: same work bound
  scan.work *= max - min + 1
  if (scan.work > OPERATOR_PATTERN_LIMITS.workPerPosition) {
    return `more than ${OPERATOR_PATTERN_LIMITS.workPerPosition} ways to try a position`
  }
  top.complex = true
  scan.lastComplex = false
  return end
}

const NAME = /^[a-z][a-z0-9-]{1,39}$/

/**
 * A detector from an operator's pattern, validated by the rule in the module comment; throws a plain
 * `Error` naming the pattern and the reason when it breaks it.
 *
 * @example
 * const acme = operatorDetector({ name: 'acme-account', pattern: 'ACME-[0-9]{8}' })
 */
export function operatorDetector(spec: OperatorPattern): SecretDetector {
  const label = `secret pattern ${JSON.stringify(spec.name)}`
  if (typeof spec.name !== 'string' || !NAME.test(spec.name)) {
    throw new Error(`${label}: name must match ${NAME.source}`)
  }
  const flags = spec.flags ?? ''
  if (!/^[imsu]*$/.test(flags) || new Set(flags).size !== flags.length) {
    throw new Error(`${label}: flags must be among i, m, s, u`)
  }
  const problem = typeof spec.pattern === 'string' ? patternProblem(spec.pattern) : 'not a string'
  if (problem !== undefined) throw new Error(`${label}: ${problem}`)
  let re: RegExp
  try {
    re = new RegExp(spec.pattern, `${flags}g`)
  } catch (error) {
    throw new Error(`${label}: ${(error as Error).message}`)
  }
  if (new RegExp(spec.pattern, flags).test(''))
    throw new Error(`${label}: matches the empty string`)
  const confidence = spec.confidence ?? 'medium'
  // A typo here would leave the kind under no rule at all: silently off.
  if (confidence !== 'high' && confidence !== 'medium') {
    throw new Error(`${label}: confidence must be "high" or "medium"`)
  }
  return { ...regexDetector(spec.name, confidence, re), longest: longestMatch(spec.pattern) }
}

/**
 * The most UTF-16 code units a pattern the rule admits can match: its quantifiers are bounded, so
 * this is finite. Every one-character atom but a literal counts 2 (it may match a surrogate pair).
 * A stream holds back this much to judge an operator kind's stand-ins whole (src/plugins/secrets/hold-back.ts).
 *
 * @example
 * longestMatch('ACME-[0-9]{8}(?:-[A-Z]{2,4})?') // 5 + 16 + 10
 */
function longestMatch(source: string): number {
  return new PatternLength(source).alternation()
}

/** A reader of a pattern that sums its atoms' longest matches (see {@link longestMatch}). */
class PatternLength {
  readonly #source: string
  #i = 0

  constructor(source: string) {
    this.#source = source
  }

  /** The longest branch up to the next `)` (or the end), past which it leaves the reader. */
  alternation(): number {
    const source = this.#source
    let best = 0
    let current = 0
    while (this.#i < source.length && source[this.#i] !== ')') {
      if (source[this.#i] === '|') {
        best = Math.max(best, current)
        current = 0
        this.#i++
        continue
      }
      current += this.#quantified(this.#atom())
    }
    return Math.max(best, current)
  }

  /** The longest match of the atom at the reader (a group, a class, an escape, a character). */
  #atom(): number {
    const source = this.#source
    const c = source[this.#i]!
    this.#i++
    if (c === '(') {
      if (source[this.#i] === '?') {
        this.#i++
        if (source[this.#i] === '<') this.#skipTo('>')
        else this.#i++ // ':'
      }
      const atom = this.alternation()
      this.#i++ // ')'
      return atom
    }
    if (c === '[') {
      if (source[this.#i] === '^') this.#i++
      if (source[this.#i] === ']') this.#i++
      this.#skipTo(']')
      return 2
    }
    if (c === '\\') return this.#escape()
    if (c === '^' || c === '$') return 0
    return c === '.' ? 2 : 1
  }

  /** An escape after its backslash: assertions match nothing, every other escape one character. */
  #escape(): number {
    const source = this.#source
    const next = source[this.#i]
    this.#i++
    if (next === 'b' || next === 'B') return 0
    if ((next === 'u' || next === 'p' || next === 'P') && source[this.#i] === '{') this.#skipTo('}')
    else if (next === 'u') this.#i += 4
    else if (next === 'x') this.#i += 2
    else if (next === 'c') this.#i += 1
    return 2
  }

  /** `atom` times the quantifier at the reader (none: once), past it and a lazy `?`. */
  #quantified(atom: number): number {
    const source = this.#source
    let max = 1
    const q = source[this.#i]
    if (q === '?') this.#i++
    else if (q === '*' || q === '+') {
      max = Number.POSITIVE_INFINITY // refused by the rule: never reached for a valid pattern
      this.#i++
    } else if (q === '{') {
      const m = /^\{(\d+)(?:,(\d*))?\}/.exec(source.slice(this.#i))
      if (m) {
        max =
          m[2] === undefined ? Number(m[1]) : m[2] === '' ? Number.POSITIVE_INFINITY : Number(m[2])
        this.#i += m[0].length
      }
    }
    if (source[this.#i] === '?') this.#i++ // lazy
    return atom * max
  }

  #skipTo(end: string): void {
    const source = this.#source
    while (this.#i < source.length && source[this.#i] !== end) {
      this.#i += source[this.#i] === '\\' ? 2 : 1
    }
    this.#i++
  }
}
