/**
 * @module `npm run layout`: checks the shape of `src/` — no import circle (type-only imports count: a
 * circle of types is still a circle a reader must hold at once), no two stage folders importing each
 * other both ways, no import against {@link DIRECTIONS}, no export that only tests, benchmarks or
 * scripts import (nor one nobody imports), no two files with one base name (`index.ts` aside), no function longer than {@link MAX_FUNCTION_LINES} lines nor with more than {@link MAX_PARAMS} positional parameters — and lists the longest functions. Parses with oxc (through rolldown, already Vite's parser), so it reads what TypeScript
 * reads without a compiler API.
 *
 * Exit code: 0 when every rule holds, 1 when one does not; `--json` prints the report as JSON.
 */
import { readdir, readFile } from 'node:fs/promises'
import { parseAst } from 'rolldown/parseAst'
import { type ExportReport, privateExports, resolve } from './exports'

/** The longest function a reader is asked to hold on one screen, and a bit. */
export const MAX_FUNCTION_LINES = 60

/** The most positional parameters a function takes: past it, callers pass one named object. */
export const MAX_PARAMS = 4

/** One file's outgoing imports (resolved to files of `src/`) and its functions' lengths. */
interface FileFacts {
  imports: string[]
  functions: { name: string; lines: number; line: number; params: number }[]
}

/** What `npm run layout` found. */
export interface LayoutReport {
  files: number
  /** Each circle once, as the files in import order, the first repeated at the end. */
  cycles: string[][]
  /** Base names shared by more than one file (other than `index.ts`), with the files. */
  sharedNames: Record<string, string[]>
  /** The longest functions, longest first. */
  longest: { file: string; name: string; line: number; lines: number }[]
  tooLong: number
  /** Functions taking more than {@link MAX_PARAMS} positional parameters, as `file:line:name (n)`. */
  tooManyParams: string[]
  /**
   * Pairs of the pipeline's stage folders ({@link STAGES}) that import each other both ways, as
   * `a ↔ b` (a before b alphabetically), with one import each way as evidence.
   */
  twoWayFolders: { pair: string; forward: string; back: string }[]
  /** Imports against a rule of {@link DIRECTIONS}: the rule's text and one import that breaks it. */
  wrongWay: { rule: string; import: string }[]
  /**
   * Imports across wings ({@link WINGS}) that break their rules: past a wing's face, or into a wing
   * the importer may not use; one per rule and pair of wings.
   */
  wings: { rule: string; import: string }[]
  /** Files under `src/` in no wing and not a package entry. */
  outsideWings: string[]
  /** Exports nothing in `src/` imports: test hooks and unused ones (see ./exports.ts). */
  exports: ExportReport
}

/** Where the code that is not the package lives: what may import `src/` from outside it. */
const OUTSIDE = ['test', 'bench', 'scripts', 'sim']

/**
 * The four wings of `src/`, each with one face (its `index.ts`): the core (the pipeline and its
 * checks), the evidence plug-ins (each registered with the core), the Worker app and the tools. A
 * wing imports another only through its face, and only the wings in its `uses`; the package entries
 * at the top of `src/` (`index.ts`, `lean.ts`) import faces only.
 */
export const WINGS: readonly { path: string; uses: readonly string[] }[] = [
  { path: 'core', uses: [] },
  { path: 'plugins/foreign-content', uses: ['core'] },
  { path: 'plugins/secrets', uses: ['core'] },
  { path: 'worker', uses: ['core', 'plugins/foreign-content', 'plugins/secrets'] },
  { path: 'tools', uses: ['core', 'plugins/foreign-content', 'plugins/secrets'] },
]

/** The folders of the request's and the answer's path, whose imports should run one way. */
export const STAGES = [
  'surfaces',
  'guard',
  'plan',
  'call',
  'verify',
  'release',
  'attempt',
  'format',
  'quarantine',
] as const

/** A folder of `src/` that may not import from some others, and why. */
interface Direction {
  from: string
  never: readonly string[]
  why: string
}

/** The stages that name no other: every stage but the public surfaces and the guard composing them. */
const INNER_STAGES = STAGES.filter((s) => s !== 'surfaces' && s !== 'guard')

/**
 * Which way the stream path runs: the release asks a judge it only knows as a type
 * (src/vocabulary/judge.ts) and never reads the checks; the verification hands over what it verified
 * and the guard composes the release; no stage reaches back up into the guard (options and shared
 * types live in src/core/vocabulary/); an attempt's context names no stage; the Worker is built on the
 * public surface, as a user's app would be.
 */
export const DIRECTIONS: readonly Direction[] = [
  {
    from: 'release',
    never: ['verify', 'canary'],
    why: 'the release reads only its judge',
  },
  { from: 'verify', never: ['release'], why: 'verify/ does not build the release' },
  { from: 'format', never: ['call'], why: 'the wire format knows no caller' },
  ...INNER_STAGES.map((from) => ({ from, never: ['guard'], why: 'no stage imports the guard' })),
  {
    from: 'attempt',
    never: STAGES.filter((s) => s !== 'attempt'),
    why: 'the attempt depends on no stage',
  },
]

interface AstNode {
  type: string
  start: number
  end: number
  [key: string]: unknown
}

/**
 * Reads every `.ts` file under `root` and reports its layout.
 *
 * @example
 * const report = await checkLayout('src')
 * if (report.cycles.length > 0) console.log(report.cycles[0]!.join(' → '))
 */
export async function checkLayout(root = 'src'): Promise<LayoutReport> {
  const files = (await readdir(root, { recursive: true }))
    .map(String)
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .map((f) => `${root}/${f}`)
    .sort()
  const known = new Set(files)
  const facts = new Map<string, FileFacts>()
  for (const file of files) facts.set(file, await readFacts(file, known))
  const longest = [...facts]
    .flatMap(([file, f]) => f.functions.map((fn) => ({ file, ...fn })))
    .sort((a, b) => b.lines - a.lines)
  return {
    files: files.length,
    cycles: findCycles(new Map([...facts].map(([file, f]) => [file, f.imports]))),
    sharedNames: sharedBaseNames(files),
    longest: longest.slice(0, 10),
    tooLong: longest.filter((f) => f.lines > MAX_FUNCTION_LINES).length,
    tooManyParams: longest
      .filter((f) => f.params > MAX_PARAMS)
      .map((f) => `${f.file}:${f.line}:${f.name} (${f.params})`)
      .sort(),
    twoWayFolders: twoWayFolders(root, facts),
    wrongWay: wrongWay(root, facts),
    wings: wingBreaks(root, facts),
    outsideWings: files.filter((f) => wingOf(root, f) === undefined),
    exports: await privateExports(root, OUTSIDE),
  }
}

/** The wing of a file under `root`: its path, '' for a package entry, undefined for neither. */
function wingOf(root: string, file: string): string | undefined {
  const rel = file.slice(root.length + 1)
  if (!rel.includes('/')) return ENTRIES.includes(rel) ? '' : undefined
  return WINGS.find((w) => rel.startsWith(`${w.path}/`))?.path
}

/** The package's entries at the top of `src/`: the default (with the plug-ins) and the lean core. */
const ENTRIES = ['index.ts', 'lean.ts', 'adapters.ts', 'default-plugins.ts']

/** Every import across wings that passes a face or goes where its wing may not, once per rule. */
function wingBreaks(root: string, facts: Map<string, FileFacts>): LayoutReport['wings'] {
  const found = new Map<string, { rule: string; import: string }>()
  const note = (rule: string, file: string, target: string) => {
    if (!found.has(rule)) found.set(rule, { rule, import: `${file} → ${target}` })
  }
  for (const [file, f] of facts) {
    const from = wingOf(root, file)
    if (from === undefined) continue
    for (const target of f.imports) {
      const to = wingOf(root, target)
      if (to === undefined || to === from) continue
      if (to === '') {
        note(`no wing imports a package entry: ${from}`, file, target)
        continue
      }
      if (target !== `${root}/${to}/index.ts`)
        note(`only through the face of ${to}: ${from || 'entry'} → ${to}`, file, target)
      const uses = WINGS.find((w) => w.path === from)?.uses
      if (uses && !uses.includes(to)) note(`${from} may not use ${to}`, file, target)
    }
  }
  return [...found.values()].sort((a, b) => a.rule.localeCompare(b.rule))
}

/** The room of a file: its folder inside the core, or its wing elsewhere ('' for an entry). */
function folderOf(root: string, file: string): string {
  const parts = file.slice(root.length + 1).split('/')
  if (parts[0] === 'core') return parts.length > 2 ? parts[1]! : 'core'
  return wingOf(root, file) ?? (parts.length > 1 ? parts[0]! : '')
}

/** Every import that breaks a rule of {@link DIRECTIONS}, one per rule and target folder. */
function wrongWay(root: string, facts: Map<string, FileFacts>): LayoutReport['wrongWay'] {
  const found = new Map<string, { rule: string; import: string }>()
  for (const [file, f] of facts) {
    const from = folderOf(root, file)
    for (const rule of DIRECTIONS) {
      if (rule.from !== from) continue
      for (const target of f.imports) {
        const to = folderOf(root, target)
        const key = `${rule.why}: ${from} → ${to}`
        if (rule.never.includes(to) && !found.has(key))
          found.set(key, { rule: key, import: `${file} → ${target}` })
      }
    }
  }
  return [...found.values()].sort((a, b) => a.rule.localeCompare(b.rule))
}

/** The stage folder of a file under `root`, if it is in one (a room of the core). */
function stageOf(root: string, file: string): string | undefined {
  if (!file.startsWith(`${root}/core/`)) return undefined
  const folder = folderOf(root, file)
  return (STAGES as readonly string[]).includes(folder) ? folder : undefined
}

function twoWayFolders(root: string, facts: Map<string, FileFacts>): LayoutReport['twoWayFolders'] {
  // One import for each direction between two stage folders: `a→b` → "file → target".
  const edges = new Map<string, string>()
  for (const [file, f] of facts) {
    const from = stageOf(root, file)
    if (!from) continue
    for (const target of f.imports) {
      const to = stageOf(root, target)
      if (to && to !== from && !edges.has(`${from}→${to}`))
        edges.set(`${from}→${to}`, `${file} → ${target}`)
    }
  }
  const pairs: LayoutReport['twoWayFolders'] = []
  for (const [edge, forward] of edges) {
    const [a, b] = edge.split('→') as [string, string]
    const back = edges.get(`${b}→${a}`)
    if (back && a < b) pairs.push({ pair: `${a} ↔ ${b}`, forward, back })
  }
  return pairs.sort((x, y) => x.pair.localeCompare(y.pair))
}

async function readFacts(file: string, known: Set<string>): Promise<FileFacts> {
  const source = await readFile(file, 'utf8')
  const ast = parseAst(source, { lang: 'ts' }, file) as unknown as { body: AstNode[] }
  const imports: string[] = []
  for (const node of ast.body) {
    const from = (node.source as { value?: unknown } | null | undefined)?.value
    if (typeof from !== 'string' || !from.startsWith('.')) continue
    const target = resolve(file, from, known)
    if (target) imports.push(target)
  }
  const lineAt = lineIndex(source)
  const functions: FileFacts['functions'] = []
  walk(ast as unknown as AstNode, undefined, (node, name) => {
    const line = lineAt(node.start)
    // A destructured object is one parameter: it is what a long list should become.
    const params = (node.params as unknown[] | undefined)?.length ?? 0
    functions.push({ name, line, lines: lineAt(node.end) - line + 1, params })
  })
  return { imports: [...new Set(imports)], functions }
}

const FUNCTION_TYPES = new Set([
  'FunctionDeclaration',
  'FunctionExpression',
  'ArrowFunctionExpression',
])

/** Calls `visit` for every function in the tree, with the best name its context gives it. */
function walk(node: AstNode, name: string | undefined, visit: (n: AstNode, name: string) => void) {
  if (FUNCTION_TYPES.has(node.type)) {
    visit(node, name ?? nameOf(node.id) ?? '(anonymous)')
  }
  for (const [key, value] of Object.entries(node)) {
    if (key === 'type' || value === null || typeof value !== 'object') continue
    const children = Array.isArray(value) ? value : [value]
    for (const child of children) {
      if (child === null || typeof child !== 'object' || typeof child.type !== 'string') continue
      walk(child as AstNode, childName(node, child as AstNode) ?? name, visit)
    }
  }
}

/** The name a function gets from where it sits: a method's key, a variable, a property. */
function childName(parent: AstNode, child: AstNode): string | undefined {
  if (!FUNCTION_TYPES.has(child.type)) return undefined
  if (parent.type === 'MethodDefinition' || parent.type === 'Property') return nameOf(parent.key)
  if (parent.type === 'VariableDeclarator') return nameOf(parent.id)
  if (parent.type === 'PropertyDefinition') return nameOf(parent.key)
  return undefined
}

function nameOf(node: unknown): string | undefined {
  const n = node as { type?: string; name?: unknown } | null | undefined
  return typeof n?.name === 'string' ? n.name : undefined
}

/** Offset → 1-based line, by binary search over the line starts. */
function lineIndex(source: string): (offset: number) => number {
  const starts = [0]
  for (let i = 0; i < source.length; i++) if (source[i] === '\n') starts.push(i + 1)
  return (offset) => {
    let lo = 0
    let hi = starts.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if (starts[mid]! <= offset) lo = mid
      else hi = mid - 1
    }
    return lo + 1
  }
}

/** Every elementary circle of the graph's strongly connected parts, shortest first, each once. */
function findCycles(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = []
  const seen = new Set<string>()
  for (const start of [...graph.keys()].sort()) {
    // Breadth-first from each file back to itself: the shortest circle through it.
    const previous = new Map<string, string>()
    const queue = [start]
    let found: string[] | undefined
    while (queue.length > 0 && !found) {
      const at = queue.shift()!
      for (const next of graph.get(at) ?? []) {
        if (next === start) {
          const path = [at]
          while (path[0] !== start) path.unshift(previous.get(path[0]!)!)
          found = [...path, start]
          break
        }
        if (!previous.has(next)) {
          previous.set(next, at)
          queue.push(next)
        }
      }
    }
    if (!found) continue
    const key = [...found.slice(0, -1)].sort().join(',')
    if (!seen.has(key)) {
      seen.add(key)
      cycles.push(found)
    }
  }
  return cycles.sort((a, b) => a.length - b.length)
}

function sharedBaseNames(files: string[]): Record<string, string[]> {
  const byName = new Map<string, string[]>()
  for (const file of files) {
    const name = file.slice(file.lastIndexOf('/') + 1)
    if (name === 'index.ts') continue
    byName.set(name, [...(byName.get(name) ?? []), file])
  }
  return Object.fromEntries([...byName].filter(([, list]) => list.length > 1))
}

function format(report: LayoutReport): string {
  const lines = [`src/: ${report.files} files`]
  lines.push(
    report.cycles.length === 0 ? 'import circles: none' : `import circles: ${report.cycles.length}`,
    ...report.cycles.map((c) => `  ${c.join(' → ')}`),
  )
  const shared = Object.entries(report.sharedNames)
  lines.push(
    shared.length === 0 ? 'shared base names: none' : `shared base names: ${shared.length}`,
    ...shared.map(([name, list]) => `  ${name}: ${list.join(', ')}`),
  )
  const { twoWayFolders: twoWay, wrongWay } = report
  lines.push(
    twoWay.length === 0
      ? 'stage folders both ways: none'
      : `stage folders both ways: ${twoWay.length}`,
    ...twoWay.map((p) => `  ${p.pair}: ${p.forward}; ${p.back}`),
    wrongWay.length === 0
      ? 'imports the wrong way: none'
      : `imports the wrong way: ${wrongWay.length}`,
    ...wrongWay.map((w) => `  ${w.rule} (${w.import})`),
    report.wings.length === 0
      ? `wings (${WINGS.map((w) => w.path).join(', ')}): through faces only, one way`
      : `imports across wings against their rules: ${report.wings.length}`,
    ...report.wings.map((w) => `  ${w.rule} (${w.import})`),
    report.outsideWings.length === 0
      ? 'files outside the wings: none'
      : `files outside the wings: ${report.outsideWings.join(', ')}`,
    `exports only tests, benchmarks or scripts import: ${report.exports.outsideOnly.length}`,
    ...report.exports.outsideOnly.map((e) => `  ${e.name} (${e.users.join(', ')})`),
    `exports nobody imports: ${report.exports.unused.length}`,
    ...report.exports.unused.map((name) => `  ${name}`),
  )
  lines.push(
    `functions over ${MAX_PARAMS} parameters: ${report.tooManyParams.length}`,
    ...report.tooManyParams.map((f) => `  ${f}`),
    `functions over ${MAX_FUNCTION_LINES} lines: ${report.tooLong}`,
    'longest functions:',
    ...report.longest.map(
      (f) => `  ${String(f.lines).padStart(4)}  ${f.name} (${f.file}:${f.line})`,
    ),
  )
  return lines.join('\n')
}

const argv = (globalThis as { process?: { argv: string[]; exitCode?: number } }).process
if (argv && /(^|[\\/])layout\.ts$/.test(argv.argv[1] ?? '')) {
  const report = await checkLayout('src')
  console.log(argv.argv.includes('--json') ? JSON.stringify(report, null, 2) : format(report))
  const ok =
    report.cycles.length === 0 &&
    Object.keys(report.sharedNames).length === 0 &&
    report.twoWayFolders.length === 0 &&
    report.wrongWay.length === 0 &&
    report.wings.length === 0 &&
    report.outsideWings.length === 0 &&
    report.exports.outsideOnly.length === 0 &&
    report.exports.unused.length === 0 &&
    report.tooLong === 0 &&
    report.tooManyParams.length === 0
  argv.exitCode = ok ? 0 : 1
}
