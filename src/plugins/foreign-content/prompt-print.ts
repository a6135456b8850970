/**
 * @module The print of one request's prompt: the winnowed fingerprints to store under its tenant, and
 * every shingle hash of it, to tell an answer's quote of its own prompt (fine) from a quote of
 * someone else's (evidence). Messages are shingled apart: no shingle spans two messages, so a prompt's
 * print is its texts' prints together, and a text's print can be remembered on its own.
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
  /**
   * The same fingerprints by where they come from: one group of the texts printed for this request
   * alone, and one per remembered text (`text` set), so a resent text's can be refreshed in the table
   * as one piece (src/plugins/foreign-content/fingerprint-book.ts).
   */
  groups: readonly { text?: string; selected: readonly number[] }[]
  /** Whether a shingle hash (not a fingerprint) occurs anywhere in the prompt. */
  contains(hash: number): boolean
  /** Units read, over all messages. */
  units: number
  /** Distinct shingle hashes held for {@link contains} (distinct per text of its own). */
  shingles: number
  /** Bytes held for {@link contains} (about 4 per distinct shingle). */
  bytes: number
}

/**
 * The print of one text on its own: a pure function of the text and the key, so a tenant's resent
 * text is printed once (src/core/memo). What the prompt's print is made of.
 */
export interface TextPrint {
  /** Its winnowed, deduplicated fingerprints. */
  selected: number[]
  /** Its distinct shingle hashes. */
  shingles: ShingleSet
  /** Units read. */
  units: number
  /** About what it holds in memory, in bytes. */
  bytes: number
}

/** Where a prompt's texts' prints may be remembered (see src/core/memo/text-memo.ts). */
export interface KnownPrints {
  /** Whether `text`'s print is (or will be) remembered: then it gets its own print. */
  remembers(text: string): boolean
  get(text: string): TextPrint | undefined
  keep(text: string, print: TextPrint, bytes: number): void
}

/**
 * Prints a prompt: each text (a message, a system prompt, a tool result) is shingled and winnowed on
 * its own. `contains` is a {@link ShingleSet} of the distinct shingle hashes: about 4 bytes each, under
 * 1 MiB for a 256k-token English prompt (about 200k shingles). A text `known` remembers gets a print of its
 * own, taken from there when it is there (and kept there when it is not); the rest share one.
 *
 * @example
 * const print = printPrompt(key, ['You are a helpful assistant.', userText], { n: 5, w: 6 })
 * table.add(model, tenant, print.selected, Date.now())
 */
export function printPrompt(
  key: FingerprintKey,
  texts: readonly string[],
  params: PrintParams,
  known?: KnownPrints,
): PromptPrint {
  const own: string[] = []
  const shared: string[] = []
  for (const text of texts) (known?.remembers(text) ? own : shared).push(text)
  // Every text remembered (a resent long prompt): no empty set and list to allocate per request.
  const rest = shared.length === 0 && own.length > 0 ? EMPTY_PRINT : printTexts(key, shared, params)
  const parts = own.map((text) => {
    const remembered = known?.get(text)
    if (remembered) return { text, print: remembered }
    const print = compact(printTexts(key, [text], params))
    known?.keep(text, print, print.bytes)
    return { text, print }
  })
  if (parts.length === 0) {
    return {
      selected: rest.selected,
      groups: [{ selected: rest.selected }],
      contains: (hash) => rest.shingles.has(hash),
      units: rest.units,
      shingles: rest.shingles.size,
      bytes: rest.shingles.bytes,
    }
  }
  const all = [rest, ...parts.map((part) => part.print)]
  let union: number[] | undefined
  return {
    // Made on first read: the guard reads the groups (a resent text's are refreshed apart).
    get selected() {
      if (union === undefined) {
        const distinct = new DistinctList(all.reduce((n, p) => n + p.selected.length, 0))
        for (const print of all) for (const value of print.selected) distinct.add(value)
        union = distinct.values
      }
      return union
    },
    groups: [
      { selected: rest.selected },
      ...parts.map((p) => ({ text: p.text, selected: p.print.selected })),
    ],
    contains: (hash) => all.some((print) => print.shingles.has(hash)),
    units: all.reduce((n, p) => n + p.units, 0),
    shingles: all.reduce((n, p) => n + p.shingles.size, 0),
    bytes: all.reduce((n, p) => n + p.shingles.bytes, 0),
  }
}

/** The print of no text, shared by every request (frozen: nothing may ever be added to it). */
const EMPTY_PRINT: TextPrint = {
  selected: Object.freeze([]) as unknown as number[],
  shingles: new ShingleSet(0),
  units: 0,
  bytes: 0,
}

/** A print to keep: its set in the smallest array that holds it (see `ShingleSet.compact`). */
function compact(print: TextPrint): TextPrint {
  const shingles = print.shingles.compact()
  return { ...print, shingles, bytes: print.bytes - print.shingles.bytes + shingles.bytes }
}

/** One print of `texts` together (one shingle set, one list), each text shingled apart. */
function printTexts(key: FingerprintKey, texts: readonly string[], params: PrintParams): TextPrint {
  // Sized once for the units to come: a maximal prompt's arrays are megabytes, and growing them
  // leaves the old ones behind for the garbage collector.
  const expected = expectedUnits(texts)
  const all = new ShingleSet(expected)
  // Winnowing keeps about 2/(w + 1) of the shingles.
  const selected = new DistinctList(expected * (2 / (params.w + 1)))
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
    selected: selected.values,
    shingles: all,
    units,
    // The set's array and the list's values (its slots are not kept).
    bytes: all.bytes + selected.values.length * 8,
  }
}

/**
 * About how many units `texts` hold: a word per 5 characters of text below U+2E80 (a maximal English
 * prompt has one per 5.4), one per character from there on (Han, kana, Hangul: a unit each or more
 * than a word's share). Spaceless scripts below it (Thai, Lao…) are undercounted, and their arrays grow.
 */
function expectedUnits(texts: readonly string[]): number {
  let units = 0
  for (const text of texts) {
    let wide = 0
    for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) >= 0x2e80) wide++
    units += wide + (text.length - wide) / 5
  }
  return Math.ceil(units) + 16
}

/**
 * Distinct 52-bit fingerprints in first-seen order (what `[...new Set(values)]` gives): open
 * addressing over an Int32Array of positions in `values`, compared whole, so two fingerprints that
 * share their low bits both stay. A `Set<number>` of values past 2^31 hashes a boxed double per insert
 * (at 32k tokens it was a fifth of the print), and slots holding the values themselves took twice the
 * memory (4 MiB for a maximal English prompt).
 */
class DistinctList {
  readonly values: number[] = []
  /** Position in `values` plus one of each held value; 0 marks an empty slot. */
  private slots: Int32Array
  private mask: number

  constructor(expected: number) {
    let capacity = 256
    while (capacity * 3 < expected * 4 && capacity < 1 << 26) capacity *= 2
    this.slots = new Int32Array(capacity)
    this.mask = capacity - 1
  }

  add(value: number): void {
    // Load up to 3/4: linear probing stays short, and the slots are half those at 1/2.
    if (this.values.length * 4 >= this.slots.length * 3) this.grow()
    const values = this.values
    // The low 32 bits of a keyed hash are uniform: spread them over the table.
    let slot = (Math.imul(value | 0, 0x9e3779b1) >>> 7) & this.mask
    for (;;) {
      const held = this.slots[slot]!
      if (held === 0) {
        values.push(value)
        this.slots[slot] = values.length
        return
      }
      if (values[held - 1] === value) return
      slot = (slot + 1) & this.mask
    }
  }

  private grow(): void {
    this.slots = new Int32Array(this.slots.length * 2)
    this.mask = this.slots.length - 1
    const values = this.values
    for (let i = 0; i < values.length; i++) {
      let slot = (Math.imul(values[i]! | 0, 0x9e3779b1) >>> 7) & this.mask
      while (this.slots[slot] !== 0) slot = (slot + 1) & this.mask
      this.slots[slot] = i + 1
    }
  }
}
