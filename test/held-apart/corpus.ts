/**
 * @module The held-apart corpus: real public text read from Debian's packages, in two splits by
 * family. The foreign-content check's parameters were chosen on node_modules' Markdown, JavaScript
 * and licences and the UDHR (docs/fingerprints.md); the second opinion's cue (how many fingerprints
 * its head holds, the question it carries) was then set while replaying the tuning split. The
 * evaluation split is families neither ever saw: its figures are the ones reported. Node only (it
 * reads the file system).
 *
 * Tuning split ({@link tuningFamilies}):
 *
 * | family | package | what |
 * |---|---|---|
 * | go | golang-1.19-src | the Go standard library's sources |
 * | rust | rust-src | Rust's core, alloc and std sources |
 * | python | python3.11 (the system's) | the Python standard library |
 * | classics-en | fortunes | literature, poems, the Tao, sayings |
 * | classics-de, classics-it, classics-ru | fortunes-de, fortunes-it, fortunes-ru | the same in German, Italian, Russian |
 * | man-de, man-fr, man-es, man-pl, man-ru, man-ja | manpages-* | manual pages in six languages, their translators' footers included |
 *
 * Evaluation split ({@link heldApartFamilies}):
 *
 * | family | package | what |
 * |---|---|---|
 * | perl | perl-modules-5.36 | Perl's standard modules (code and their POD) |
 * | tcl | libtcl8.6, libtk8.6 | Tcl's and Tk's script libraries |
 * | vim | vim-runtime | Vim's runtime scripts |
 * | vim-help | vim-runtime | Vim's English help files |
 * | licences | base-files | GPL-2, GPL-3, LGPL-2.1, GFDL-1.3, Artistic, MPL-1.1 (none of the built-in public licences) |
 *
 * A piece of the evaluation split that the tuning split holds word for word, or that shares seven
 * words in a row with the built-in public texts (the licences of node_modules, the UDHR), is left out.
 * | man-en | manpages and every installed package | English manual pages |
 * | man-it, man-nl, man-pt, man-sv, man-uk, man-ko, man-zh | man-db, apt, dpkg, passwd, procps, … | manual pages in seven more languages |
 *
 * Each family is cut into pieces of 30–150 units (paragraphs, functions, entries), in a fixed order,
 * so a seed picks the same pieces on every machine with the same packages.
 */
import { PUBLIC_BACKGROUND, units } from '../../src/plugins/foreign-content'
import { PUBLIC_UDHR } from '../../src/plugins/foreign-content/public-udhr'
import { manText } from './roff'

interface Dirent {
  name: string
  isDirectory(): boolean
  isFile(): boolean
}
interface NodeFs {
  readdirSync(path: string, options: { withFileTypes: true }): Dirent[]
  readFileSync(path: string): Uint8Array
  existsSync(path: string): boolean
}
interface NodeZlib {
  gunzipSync(data: Uint8Array): Uint8Array
}
const fs = (await import('node:fs' as string)) as NodeFs
const zlib = (await import('node:zlib' as string)) as NodeZlib
const utf8 = new TextDecoder()

/** One piece of a family, with the title a user would ask for it by. */
export interface Piece {
  text: string
  /** Its file and place: `net/http/server.go, part 3`, `ls (de), part 2`, `literature #41`. */
  title: string
}

/** A family of real text and its pieces. */
export interface Family {
  name: string
  /** `code` or `prose`: how answers carry it. */
  kind: 'code' | 'prose'
  /** The language of its prose (for openers), or the programming language. */
  language: string
  pieces: Piece[]
}

/** A file's pieces, titled by the file's name and their place in it. */
function titled(name: string, texts: readonly string[]): Piece[] {
  return texts.map((text, i) => ({ text, title: `${name}, part ${i + 1}` }))
}

/** The Debian packages of the tuning split (`.ci/run` installs them for `npm run test:slow`). */
export const TUNING_PACKAGES = [
  'golang-1.19-src',
  'rust-src',
  'fortunes',
  'fortunes-de',
  'fortunes-it',
  'fortunes-ru',
  'manpages-de',
  'manpages-fr',
  'manpages-es',
  'manpages-pl',
  'manpages-ru',
  'manpages-ja',
]

/** The Debian packages of the evaluation split (`.ci/run` installs them for `npm run test:slow`). */
export const CORPUS_PACKAGES = [
  'perl-modules-5.36',
  'libtcl8.6',
  'libtk8.6',
  'vim-runtime',
  'base-files',
  'manpages',
  'man-db',
  'apt',
  'dpkg',
  'passwd',
  'login',
  'procps',
  'psmisc',
  'xz-utils',
]

/** Files under `dir` whose names pass `keep`, in path order, every `step`-th, at most `max`. */
function files(dir: string, keep: (path: string) => boolean, max: number): string[] {
  const out: string[] = []
  const walk = (path: string) => {
    if (out.length >= max * 40) return
    const entries = fs.readdirSync(path, { withFileTypes: true })
    entries.sort((a, b) => (a.name < b.name ? -1 : 1))
    for (const e of entries) {
      const full = `${path}/${e.name}`
      if (e.isDirectory() && !/^(test|tests|testdata|idlelib|vendor)$/.test(e.name)) walk(full)
      else if (e.isFile() && keep(full)) out.push(full)
    }
  }
  if (fs.existsSync(dir)) walk(dir)
  const step = Math.max(1, Math.floor(out.length / max))
  return out.filter((_, i) => i % step === 0).slice(0, max)
}

const read = (path: string) =>
  utf8.decode(path.endsWith('.gz') ? zlib.gunzipSync(fs.readFileSync(path)) : fs.readFileSync(path))

/** Pieces of 30–150 units: consecutive blocks (split at blank lines) joined until long enough. */
function piecesOf(text: string, min = 30, max = 150): string[] {
  const out: string[] = []
  let current = ''
  let count = 0
  for (const block of text.split(/\n\s*\n/)) {
    const n = units(block).length
    if (n === 0) continue
    if (n > max) {
      if (count >= min) out.push(current.trim())
      current = ''
      count = 0
      continue
    }
    current = current ? `${current}\n\n${block}` : block
    count += n
    if (count >= min) {
      if (count <= max) out.push(current.trim())
      current = ''
      count = 0
    }
  }
  return out
}

/** A code file cut into pieces: its head (package, imports, first declaration) and its functions. */
function codePieces(text: string): string[] {
  // Licence headers are the tuned family: leave them out.
  const body = text.replace(/^(\/\/[^\n]*\n|#[^\n]*\n|\s*\n)+/, '')
  return piecesOf(body)
}

/** Fortune entries of 30–150 units. */
function fortunePieces(dir: string, names: readonly string[] | undefined): Piece[] {
  if (!fs.existsSync(dir)) return []
  const out: Piece[] = []
  const all = fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile() && !/\.(dat|u8)$/.test(e.name))
    .map((e) => e.name)
    .sort()
  for (const name of names ?? all) {
    if (!all.includes(name)) continue
    for (const [i, entry] of read(`${dir}/${name}`).split(/\n%\n/).entries()) {
      const n = units(entry).length
      if (n >= 30 && n <= 150) out.push({ text: entry.trim(), title: `${name} fortune #${i + 1}` })
    }
  }
  return out
}

function manPieces(language: string, max: number): Piece[] {
  const out: Piece[] = []
  // English pages sit in /usr/share/man/man1…man8, beside the other languages' folders.
  const [dir, keep] =
    language === 'en'
      ? ['/usr/share/man', (p: string) => /^\/usr\/share\/man\/man\d\/.*\.gz$/.test(p)]
      : [`/usr/share/man/${language}`, (p: string) => p.endsWith('.gz')]
  for (const path of files(dir, keep, max)) {
    const page = path.split('/').at(-1)!.replace(/\.gz$/, '')
    out.push(...titled(`the ${language} manual page ${page}`, piecesOf(manText(read(path)))))
  }
  return out
}

function codeFamily(name: string, dir: string, extension: RegExp, max: number): Family {
  const pieces: Piece[] = []
  for (const path of files(dir, (p) => extension.test(p) && !/_test\.go$/.test(p), max)) {
    pieces.push(...titled(path.slice(dir.length + 1), codePieces(read(path))))
  }
  return { name, kind: 'code', language: name, pieces }
}

/** Prose files cut into pieces, titled by their names. */
function proseFamily(name: string, language: string, paths: readonly string[]): Family {
  const pieces: Piece[] = []
  for (const path of paths.filter((p) => fs.existsSync(p))) {
    pieces.push(...titled(path.split('/').at(-1)!, piecesOf(read(path))))
  }
  return { name, kind: 'prose', language, pieces }
}

/** Licences of base-files, one version of each, none of them built in as public text. */
const LICENCES = ['GPL-2', 'GPL-3', 'LGPL-2.1', 'GFDL-1.3', 'Artistic', 'MPL-1.1']

/**
 * The evaluation split: every family whose package is installed (a missing one is left out, and the
 * caller says so).
 *
 * @example
 * const families = heldApartFamilies()
 */
export function heldApartFamilies(filesPerFamily = 160): Family[] {
  const families: Family[] = [
    codeFamily('perl', '/usr/share/perl/5.36.0', /\.pm$/, filesPerFamily),
    codeFamily('tcl', '/usr/share/tcltk', /\.tcl$/, filesPerFamily),
    codeFamily('vim', '/usr/share/vim/vim90', /\.vim$/, filesPerFamily),
    proseFamily(
      'vim-help',
      'en',
      files('/usr/share/vim/vim90/doc', (p) => p.endsWith('.txt'), filesPerFamily),
    ),
    proseFamily(
      'licences',
      'en',
      LICENCES.map((name) => `/usr/share/common-licenses/${name}`),
    ),
    ...(['en', 'it', 'nl', 'pt', 'sv', 'uk', 'ko', 'zh_CN'] as const).map(
      (language): Family => ({
        name: `man-${language === 'zh_CN' ? 'zh' : language}`,
        kind: 'prose',
        language,
        pieces: manPieces(language, filesPerFamily),
      }),
    ),
  ]
  // Untranslated passages (a manual's option lists, a licence quoted) recur across languages: a piece
  // the tuning split holds word for word is not held apart, nor one sharing seven words in a row with
  // the built-in public texts (a warranty disclaimer, MPL-1.1's definitions that MPL-2.0 kept).
  const tuned = new Set(tuningFamilies(filesPerFamily).flatMap((f) => f.pieces.map((p) => p.text)))
  const builtIn = new Set([...PUBLIC_BACKGROUND, ...PUBLIC_UDHR].flatMap(sevens))
  const apart = (p: Piece) => !tuned.has(p.text) && !sevens(p.text).some((s) => builtIn.has(s))
  return families
    .map((family) => ({ ...family, pieces: family.pieces.filter(apart) }))
    .filter((family) => family.pieces.length >= 20)
}

/** A text's runs of seven units, lower-cased. */
export function sevens(text: string): string[] {
  const list = units(text).map((u) => u.text.toLowerCase())
  const out: string[] = []
  for (let i = 7; i <= list.length; i++) out.push(list.slice(i - 7, i).join(' '))
  return out
}

/**
 * The tuning split: the families the second opinion's cue was set on, kept for comparison.
 *
 * @example
 * const families = tuningFamilies()
 */
export function tuningFamilies(filesPerFamily = 160): Family[] {
  const families: Family[] = [
    codeFamily('go', '/usr/share/go-1.19/src', /\.go$/, filesPerFamily),
    codeFamily('rust', '/usr/src/rustc-1.63.0/library', /\.rs$/, filesPerFamily),
    codeFamily('python', '/usr/lib/python3.11', /\.py$/, filesPerFamily),
    {
      name: 'classics-en',
      kind: 'prose',
      language: 'eng',
      pieces: fortunePieces('/usr/share/games/fortunes', [
        'literature',
        'songs-poems',
        'tao',
        'wisdom',
        'people',
        'humorists',
      ]),
    },
    {
      name: 'classics-de',
      kind: 'prose',
      language: 'deu',
      pieces: fortunePieces('/usr/share/games/fortunes/de', undefined),
    },
    {
      name: 'classics-it',
      kind: 'prose',
      language: 'ita',
      pieces: fortunePieces('/usr/share/games/fortunes/it', undefined),
    },
    {
      name: 'classics-ru',
      kind: 'prose',
      language: 'rus',
      pieces: fortunePieces('/usr/share/games/fortunes/ru', undefined),
    },
    ...(['de', 'fr', 'es', 'pl', 'ru', 'ja'] as const).map(
      (language): Family => ({
        name: `man-${language}`,
        kind: 'prose',
        language,
        pieces: manPieces(language, filesPerFamily),
      }),
    ),
  ]
  return families.filter((family) => family.pieces.length >= 20)
}
