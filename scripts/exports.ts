/**
 * @module The exports of `src/` that nothing in `src/` imports: test hooks (imported only by tests,
 * benchmarks or scripts) and exports nobody imports. The package's entry points (its `exports` and
 * `bin`) are the public surface and are not counted. Read by `npm run layout`.
 */
import { readdir, readFile } from 'node:fs/promises'
import { parseAst } from 'rolldown/parseAst'

/** The package's entry points: what `package.json` exports and runs. */
export const ENTRY_POINTS = [
  'src/index.ts',
  'src/core/adapters/index.ts',
  'src/worker/index.ts',
  'src/tools/cli.ts',
] as const

/** What {@link privateExports} found, as `file#name`. */
export interface ExportReport {
  /** Exported, imported by no file of `src/` but by tests, benchmarks or scripts (the first named). */
  outsideOnly: { name: string; users: string[] }[]
  /** Exported and imported by nobody. */
  unused: string[]
}

interface Node {
  type: string
  [key: string]: unknown
}

interface Named {
  name?: string
  value?: string
}

async function tsFiles(root: string): Promise<string[]> {
  try {
    return (await readdir(root, { recursive: true }))
      .map(String)
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
      .map((f) => `${root}/${f}`)
      .sort()
  } catch {
    return []
  }
}

/**
 * The file a relative import specifier names, if it is one of `known`.
 *
 * @example
 * resolve('src/a/b.ts', '../c', known) // 'src/c.ts' or 'src/c/index.ts'
 */
export function resolve(from: string, specifier: string, known: Set<string>): string | undefined {
  const parts = from.split('/').slice(0, -1)
  for (const part of specifier.split('/')) {
    if (part === '..') parts.pop()
    else if (part !== '.') parts.push(part)
  }
  const base = parts.join('/').replace(/\.js$/, '')
  return [`${base}.ts`, `${base}/index.ts`].find((f) => known.has(f))
}

/** The names a top-level statement exports (without a source: its own declarations). */
function exportedNames(node: Node): string[] {
  if (node.type !== 'ExportNamedDeclaration' || node.source) return []
  const names: string[] = []
  const declaration = node.declaration as
    | { id?: Named; declarations?: { id?: Named }[] }
    | null
    | undefined
  if (declaration?.id?.name) names.push(declaration.id.name)
  for (const d of declaration?.declarations ?? []) if (d.id?.name) names.push(d.id.name)
  for (const s of (node.specifiers as { exported: Named }[] | undefined) ?? []) {
    const name = s.exported.name ?? s.exported.value
    if (name) names.push(name)
  }
  return names
}

/** What a statement imports (or re-exports) from a file of `src/`: `file#name`, `file#*` for all. */
function importedKeys(node: Node, file: string, known: Set<string>): string[] {
  const from = (node.source as Named | null | undefined)?.value
  if (typeof from !== 'string' || !from.startsWith('.')) return []
  const target = resolve(file, from, known)
  if (!target) return []
  if (node.type === 'ExportAllDeclaration') return [`${target}#*`]
  const specifiers = (node.specifiers as { type: string; imported?: Named; local?: Named }[]) ?? []
  return specifiers.map((s) => {
    if (s.type !== 'ImportSpecifier' && s.type !== 'ExportSpecifier') return `${target}#*`
    return `${target}#${s.imported?.name ?? s.imported?.value ?? s.local?.name}`
  })
}

/**
 * The exports of `root` that no other file of `root` imports, with who does import them.
 *
 * @example
 * const { outsideOnly, unused } = await privateExports('src', ['test', 'bench', 'scripts', 'sim'])
 */
export async function privateExports(
  root: string,
  users: readonly string[],
): Promise<ExportReport> {
  const own = await tsFiles(root)
  const known = new Set(own)
  const outside = (await Promise.all(users.map(tsFiles))).flat()
  const exported = new Map<string, string[]>()
  const importers = new Map<string, Set<string>>()
  for (const file of [...own, ...outside]) {
    const source = await readFile(file, 'utf8')
    const ast = parseAst(source, { lang: 'ts' }, file) as unknown as { body: Node[] }
    const keys = ast.body.flatMap((node) => importedKeys(node, file, known))
    // A dynamic import (`await import('./table')`) may read any export of its module.
    for (const m of source.matchAll(/\bimport\(\s*['"](\.[^'"]+)['"]\s*\)/g)) {
      const target = resolve(file, m[1]!, known)
      if (target) keys.push(`${target}#*`)
    }
    for (const key of keys) {
      if (!importers.has(key)) importers.set(key, new Set())
      importers.get(key)!.add(file)
    }
    if (!known.has(file)) continue
    exported.set(file, ast.body.flatMap(exportedNames))
  }
  const entries = new Set(ENTRY_POINTS.map((f) => f.replace(/^src/, root)))
  const report: ExportReport = { outsideOnly: [], unused: [] }
  for (const [file, names] of exported) {
    if (entries.has(file)) continue
    for (const name of names) {
      const by = [
        ...(importers.get(`${file}#${name}`) ?? []),
        ...(importers.get(`${file}#*`) ?? []),
      ]
      const others = by.filter((u) => u !== file)
      if (others.some((u) => known.has(u))) continue
      if (others.length > 0)
        report.outsideOnly.push({ name: `${file}#${name}`, users: others.sort() })
      else report.unused.push(`${file}#${name}`)
    }
  }
  return report
}
