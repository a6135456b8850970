/**
 * @module Mines a background of common text from packages: passages of 10 units or more found in at
 * least two scopes (a scope's packages share files: they count once) — licences, compiler and bundler
 * helpers, module wrappers, README boilerplate, the text every codebase repeats. Used by
 * scripts/mine-background.ts over all of node_modules (the audit's built-in background) and by the
 * real-text log set over the half of node_modules its traffic is never drawn from (its figures are
 * measured with that background, not the built-in one).
 */
import { units } from '../../src/plugins/foreign-content'
import type { Package } from './real-logset'

/** Units of a passage: at least one winnowing window (w + n − 1), so it holds a selection. */
const MIN_UNITS = 10
const N = 7

function hash(text: string): number {
  let h = 2166136261
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619)
  return h >>> 0
}

/**
 * The passages found in `minScopes` scopes of `pkgs` or more, heaviest first (scopes × length),
 * `maxChars` of them at most.
 *
 * @example
 * const texts = mineBackground(readPackages('node_modules'), { minScopes: 2, maxChars: 400_000 })
 */
export function mineBackground(
  pkgs: readonly Package[],
  options: { minScopes: number; maxChars: number },
): string[] {
  const scopes = new Map<string, string[]>()
  for (const p of pkgs) {
    const scope = p.name.split('/')[0]!
    scopes.set(scope, [...(scopes.get(scope) ?? []), ...p.licences, ...p.prose, ...p.code])
  }
  const printed = [...scopes.values()].map((files) =>
    files.map((text) => {
      const list = units(text)
      const keys: number[] = []
      for (let i = 0; i + N <= list.length; i++) {
        keys.push(
          hash(
            list
              .slice(i, i + N)
              .map((u) => u.text)
              .join('\u0001'),
          ),
        )
      }
      return { text, list, keys }
    }),
  )
  /** Shingle hash → scopes holding it (counted once per scope). */
  const count = new Map<number, number>()
  for (const files of printed) {
    const seen = new Set<number>()
    for (const { keys } of files) for (const k of keys) seen.add(k)
    for (const k of seen) count.set(k, (count.get(k) ?? 0) + 1)
  }
  const passages = new Map<string, { text: string; weight: number }>()
  for (const files of printed) {
    for (const { text, list, keys } of files) {
      let first = -1
      for (let i = 0; i <= keys.length; i++) {
        if (i < keys.length && (count.get(keys[i]!) ?? 0) >= options.minScopes) {
          if (first < 0) first = i
          continue
        }
        if (first >= 0 && i - 1 - first + N >= MIN_UNITS) {
          const slice = text.slice(list[first]!.start, list[i - 1 + N - 1]!.end)
          const words = units(slice).map((u) => u.text)
          // Tables of numbers (0, 1, 1, 0, …) repeat across packages too, and say nothing.
          if (new Set(words).size >= 6) {
            const key = words.join(' ')
            const weight = (count.get(keys[first]!) ?? 0) * (i - first)
            const held = passages.get(key)
            if (held === undefined || held.weight < weight)
              passages.set(key, { text: slice, weight })
          }
        }
        first = -1
      }
    }
  }
  const kept: string[] = []
  let chars = 0
  for (const { text } of [...passages.values()].sort((a, b) => b.weight - a.weight)) {
    if (chars + text.length > options.maxChars) continue
    kept.push(text)
    chars += text.length
  }
  return kept.sort()
}
