/**
 * @module The simulated model's tokenizer: gpt-tokenizer `cl100k_base`, loaded lazily.
 *
 * Deliberately not the guard's o200k: a real model's tokenizer never matches the guard's count, and the
 * guard must keep a margin for that drift.
 */
import { decoder } from 'gpt-tokenizer/BytePairEncodingCore'

type Cl100k = typeof import('gpt-tokenizer/encoding/cl100k_base')

/** Encode and decode with cl100k, special-token text treated as plain text. */
export interface SimTokenizer {
  /** Token ids of `text`; never throws on `<|endoftext|>` or any other special-token text. */
  encode(text: string): number[]
  /** Text of `tokens`; an incomplete trailing UTF-8 sequence becomes U+FFFD. */
  decode(tokens: Iterable<number>): string
  /**
   * Decodes consecutive groups as one stream (a character split between groups is emitted whole in the
   * later group), so the concatenation equals `decode` of all tokens.
   */
  decodeGroups(groups: readonly (readonly number[])[]): string[]
}

const PLAIN = { disallowedSpecial: new Set<string>() }
let loading: Promise<SimTokenizer> | undefined

/**
 * The shared tokenizer, imported on first use (the ranks table is large; most isolates never need it).
 *
 * @example
 * const tok = await loadTokenizer(); tok.encode('hello').length // 1
 */
export function loadTokenizer(): Promise<SimTokenizer> {
  loading ??= import('gpt-tokenizer/encoding/cl100k_base').then(wrap)
  return loading
}

function wrap(cl: Cl100k): SimTokenizer {
  // gpt-tokenizer decodes through one module-wide streaming TextDecoder; an incomplete tail left by any
  // decode (ours or another encoding's in the same isolate) would leak into the next one. Flush around
  // every call so decoding stays a pure function of its tokens.
  const flush = (): string => decoder.decode()
  return {
    encode: (text) => cl.encode(text, PLAIN),
    decode(tokens) {
      flush()
      const text = cl.decode(tokens)
      return text + flush()
    },
    decodeGroups(groups) {
      flush()
      const out = groups.map((group) => cl.decode(group))
      const tail = flush()
      if (out.length > 0) out[out.length - 1] += tail
      return out
    },
  }
}
