/**
 * @module The print of one request's prompt: the winnowed fingerprints to store under its tenant, and
 * every shingle hash of it, to tell an answer's quote of its own prompt (fine) from a quote of
 * someone else's (evidence). Messages are shingled apart: no shingle spans two messages.
 */
import { type FingerprintKey, fingerprintOf } from './hash'
import { ShingleSet } from './shingle-set'
import { Shingler } from './shingler'
import { Winnower } from './winnow'

/** Shingle size and winnowing window (the thresholds of evidence live in {@link FingerprintParams}). */
export interface PrintParams {
  /** Units per shingle. */
  n: number
  /** Winnowing window, in shingles. */
  w: number
}

/** What a prompt leaves behind. */
export interface PromptPrint {
  /** Winnowed, deduplicated fingerprints (SipHash outputs): what the table stores for the tenant. */
  selected: number[]
  /** Whether a shingle hash (not a fingerprint) occurs anywhere in the prompt. */
  contains(hash: number): boolean
  /** Units read, over all messages. */
  units: number
  /** Distinct shingle hashes held for {@link contains}. */
  shingles: number
  /** Bytes held for {@link contains} (8 to 16 per distinct shingle). */
  bytes: number
}

/**
 * Prints a prompt: each text (a message, a system prompt, a tool result) is shingled and winnowed on
 * its own. `contains` is a {@link ShingleSet} of the distinct shingle hashes: 8 to 16 bytes each, 2 MiB
 * for a 256k-token English prompt (about 200k shingles).
 *
 * @example
 * const print = printPrompt(key, ['You are a helpful assistant.', userText], { n: 5, w: 6 })
 * table.add(model, tenant, print.selected, Date.now())
 */
export function printPrompt(
  key: FingerprintKey,
  texts: readonly string[],
  params: PrintParams,
): PromptPrint {
  // About one unit per 5.5 characters of English, one per character of CJK: size for the middle.
  const all = new ShingleSet(texts.reduce((sum, text) => sum + text.length, 0) / 4)
  const selected = new Set<number>()
  let units = 0
  for (const text of texts) {
    const shingler = new Shingler(key, { n: params.n })
    const winnow = new Winnower(params.w)
    shingler.read(text, true, (hash, _start, _end, index) => {
      all.add(hash)
      if (winnow.push(hash, index)) selected.add(fingerprintOf(key, winnow.selectedHash))
    })
    if (winnow.end()) selected.add(fingerprintOf(key, winnow.selectedHash))
    units += shingler.units
  }
  return {
    selected: [...selected],
    contains: (hash) => all.has(hash),
    units,
    shingles: all.size,
    bytes: all.bytes,
  }
}
