/**
 * @module The echo for JSON-mode answers: a first member holding the canary, removed before release.
 *
 * Why: a JSON-mode reply cannot open with a bare code line, and a request asked for no echo would let
 * `response_format: { type: "json_object" }` switch the provenance check off. A
 * model in JSON mode still follows an instruction about the object's first member, and that member,
 * like the text echo, proves the prompt's last text was read. (A schema-constrained decoder emits
 * what the schema forces, so a canary put into a schema proves nothing: `json_schema` and
 * `guided_json` requests get no echo; see src/core/plan/request.ts.)
 */
import { matchEcho } from './echo'

/** The member name the directive asks for. */
export const JSON_ECHO_MEMBER = 'guard_echo'

/**
 * The JSON-mode directive for `canary` (the last text of the prompt).
 *
 * @example
 * buildJsonEchoDirective('cnry_0123456789abcdefghjkmnpq')
 * // 'Start your JSON object with the member "guard_echo": "cnry_…", then write the object you would otherwise write.'
 */
export function buildJsonEchoDirective(canary: string): string {
  return `Start your JSON object with the member "${JSON_ECHO_MEMBER}": "${canary}", then write the object you would otherwise write.`
}

/** Where an echo sits in the reply: remove `[start, end)` before release. */
export type EchoSpan =
  | { status: 'echoed'; start: number; end: number }
  | { status: 'pending' }
  | { status: 'missing' }

/** Whitespace a model may put between JSON tokens before the echo member; more is not waited for. */
const MAX_SPACE = 16

/**
 * Whether a JSON reply opens with `{"guard_echo": "<canary>"` followed by `,` or `}`. On `echoed`, the
 * span covers the member and its comma, so the released object is the model's own object without it
 * (`{"guard_echo":"c","a":1}` → `{"a":1}`; a lone member leaves `{}`). `final` says no more text comes.
 *
 * @example
 * matchJsonEcho(`{"guard_echo":"${canary}","a":1}`, canary, true) // { status: 'echoed', start: 1, end: 48 }
 */
export function matchJsonEcho(leading: string, canary: string, final: boolean): EchoSpan {
  let pos = 0
  let start = 0
  const pending = (): EchoSpan => (final ? { status: 'missing' } : { status: 'pending' })
  const space = (): boolean => {
    const from = pos
    while (pos < leading.length && /\s/.test(leading[pos]!)) pos++
    return pos - from <= MAX_SPACE
  }
  /** Consumes `expected` (case-insensitively when asked); false on a mismatch, undefined at the end. */
  const literal = (expected: string, anyCase = false): boolean | undefined => {
    for (const char of expected) {
      if (pos >= leading.length) return undefined
      const got = leading[pos]!
      if (anyCase ? got.toLowerCase() !== char.toLowerCase() : got !== char) return false
      pos++
    }
    return true
  }
  const steps: (() => boolean | undefined)[] = [
    space,
    () => literal('{'),
    () => {
      start = pos
      return space()
    },
    () => literal(`"${JSON_ECHO_MEMBER}"`),
    space,
    () => literal(':'),
    space,
    () => literal(`"${canary}"`, true),
    space,
  ]
  for (const step of steps) {
    const ok = step()
    if (ok === false) return { status: 'missing' }
    if (ok === undefined) return pending()
  }
  if (pos >= leading.length) return pending()
  if (leading[pos] === ',') return { status: 'echoed', start, end: pos + 1 }
  if (leading[pos] === '}') return { status: 'echoed', start, end: pos }
  return { status: 'missing' }
}

/**
 * The echo span for a proof kind: the text echo (opening line, see echo.ts) or the JSON member.
 *
 * @example
 * const span = matchEchoSpan('json', content, canary, false)
 */
export function matchEchoSpan(
  kind: 'text' | 'json',
  leading: string,
  canary: string,
  final: boolean,
): EchoSpan {
  if (kind === 'json') return matchJsonEcho(leading, canary, final)
  const match = matchEcho(leading, canary, final)
  if (match.status !== 'echoed') return match
  return { status: 'echoed', start: 0, end: leading.length - match.rest.length }
}
