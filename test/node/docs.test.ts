import { readdir, readFile, stat } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { figureProblems, logWords, numberedLogWords, wordCount } from '../support/doc-figures'
import { comments } from '../support/source-comments'
import { STARTER_SCRIPTS } from '../support/starter'

/**
 * The docs say what the code does. Each check here reads the source of truth (a type union, the
 * package scripts, the file tree) and the prose that describes it, so a new reason, error code, script
 * or moved file cannot leave the README behind without a red test. The README is a landing page:
 * the full tables live in docs/, and it links there.
 */
const read = (path: string): Promise<string> => readFile(path, 'utf8')

/** The string members of an exported union type, read from its source. */
async function unionMembers(path: string, name: string): Promise<string[]> {
  const source = await read(path)
  const start = source.indexOf(`export type ${name} =`)
  expect(start, `${name} in ${path}`).toBeGreaterThanOrEqual(0)
  const body = source.slice(start).split(/\n\s*\n/)[0]!
  const members = [...body.matchAll(/\|\s*'([a-z_]+)'/g)].map((m) => m[1]!)
  expect(members.length).toBeGreaterThan(2)
  return members
}

/** The rows' first cells of the Markdown table whose header starts with `first`. */
function tableKeys(markdown: string, first: string): string[] {
  const lines = markdown.split('\n')
  const header = lines.findIndex((l) => l.startsWith(`| ${first} |`))
  expect(header, `a table headed "${first}"`).toBeGreaterThanOrEqual(0)
  const keys: string[] = []
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith('|')) break
    keys.push(...[...(line.split('|')[1] ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1]!))
  }
  return keys
}

/**
 * The names an entry point exports: its `export { … }` lists, `export const { … } =`, what it takes
 * on with `export * from` (less the names it exports itself), and `default`.
 */
async function entryExports(path: string): Promise<string[]> {
  const source = await read(path)
  const names: string[] = []
  for (const m of source.matchAll(/export\s+(?:type\s+|const\s+)?\{([^}]*)\}/g)) {
    for (const part of m[1]!.split(',')) {
      const name = part
        .trim()
        .replace(/^type\s+/, '')
        .split(/\s+as\s+/)
        .pop()!
        .trim()
      if (name) names.push(name)
    }
  }
  if (/^export default\b/m.test(source)) names.push('default')
  for (const m of source.matchAll(/^export \* from '(\.[^']+)'/gm)) {
    const from = `${path.slice(0, path.lastIndexOf('/') + 1)}${m[1]!.replace(/^\.\//, '')}.ts`
    for (const name of await entryExports(from)) if (!names.includes(name)) names.push(name)
  }
  return names.sort()
}

/** The markdown files a reader meets. */
async function markdownFiles(): Promise<string[]> {
  const files = ['README.md', 'CHANGELOG.md', 'sim/README.md']
  for (const dir of ['docs', 'examples']) {
    for (const entry of await readdir(dir, { recursive: true })) {
      if (String(entry).endsWith('.md')) files.push(`${dir}/${entry}`)
    }
  }
  return files
}

/** GitHub's anchors of a Markdown file's headings (lower case, punctuation dropped, spaces → '-'). */
async function anchors(path: string): Promise<Set<string>> {
  const seen = new Map<string, number>()
  const out = new Set<string>()
  let fenced = false
  for (const line of (await read(path)).split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced
    const m = fenced ? null : line.match(/^#{1,6}\s+(.*?)\s*#*\s*$/)
    if (!m) continue
    const slug = m[1]!
      .replace(/`/g, '')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-')
    const n = seen.get(slug) ?? 0
    seen.set(slug, n + 1)
    out.add(n === 0 ? slug : `${slug}-${n}`)
  }
  return out
}

describe('the README and docs agree with the code', () => {
  it('should explain every reason a verdict can give, in the incident reasons table', async () => {
    const reasons = await unionMembers('src/core/vocabulary/verdict-types.ts', 'Reason')
    const home = 'docs/incidents.md'
    const documented = tableKeys(await read(home), 'reason')
    expect(reasons.filter((r) => !documented.includes(r))).toEqual([])
    // One table: a second copy elsewhere would fall behind (docs/ecosystem.md's did).
    for (const file of (await markdownFiles()).filter((f) => f !== home)) {
      expect((await read(file)).match(/^\| reason\s*\|/m), file).toBeNull()
    }
  })

  it('should say what to do for every error code, in Troubleshooting', async () => {
    const codes = await unionMembers('src/core/errors.ts', 'GuardErrorCode')
    const troubleshooting = await read('docs/troubleshooting.md')
    expect(troubleshooting.startsWith('# Troubleshooting')).toBe(true)
    expect(codes.filter((c) => !tableKeys(troubleshooting, 'code').includes(c))).toEqual([])
    // The README's own Troubleshooting section points there.
    const readme = await read('README.md')
    expect(readme.slice(readme.indexOf('## Troubleshooting'))).toContain(
      '(docs/troubleshooting.md)',
    )
  })

  // npm start's binding table marks the simulator `[not connected]` (wrangler's registry of other dev
  // processes; the simulator runs in the same one): a new operator takes it for a broken binding.
  it("should explain npm start's [not connected] binding status where npm start is run", async () => {
    const readme = await read('README.md')
    const start = readme.slice(readme.indexOf('**Against the running Worker:**'))
    const said = start.slice(0, start.indexOf('```'))
    expect(said).toContain('`env.AI (workers-ai-sim#SimulatedAi) … [not connected]`')
    expect(said).toMatch(/other\*? `wrangler dev`\s+processes/)
    expect(said).toContain('the binding works')
  })

  it('should keep the README a landing page: at most 400 lines, the rest linked in docs/', async () => {
    const readme = await read('README.md')
    expect(readme.split('\n').length).toBeLessThanOrEqual(400)
    // The suites' tables stay in their results files; the README and docs quote headlines from them.
    expect(readme).not.toMatch(/<!-- bench:/)
    for (const doc of [
      'benchmarks',
      'how-it-decides',
      'limits',
      'reliability',
      'troubleshooting',
    ]) {
      expect(readme, doc).toContain(`](docs/${doc}.md`)
    }
  })

  it('should state the licence in package.json, LICENSE and the README, and ship it', async () => {
    const pkg = JSON.parse(await read('package.json')) as { license?: string; files: string[] }
    expect(pkg.license).toBe('MIT')
    expect(pkg.files).toContain('LICENSE')
    expect((await read('LICENSE')).split('\n')[0]).toBe('MIT License')
    expect(await read('README.md')).toMatch(/## License\n\nMIT/)
  })

  it('should only name npm scripts that exist', async () => {
    // Those of this repository, and those `workers-ai-guard init` gives a consumer's project.
    const scripts = [
      ...Object.keys(
        (JSON.parse(await read('package.json')) as { scripts: Record<string, string> }).scripts,
      ),
      ...Object.keys(STARTER_SCRIPTS),
    ]
    const missing: string[] = []
    for (const file of await markdownFiles()) {
      for (const m of (await read(file)).matchAll(/npm run (?:-s |--silent )?([a-z][\w:.-]*)/g)) {
        if (!scripts.includes(m[1]!)) missing.push(`${file}: npm run ${m[1]}`)
      }
    }
    expect(missing).toEqual([])
  })

  // npm links no package's own bin into its own node_modules/.bin: `npx workers-ai-guard` in this
  // repository is "command not found" whatever was built. In-repo commands are the scripts.
  it('should not tell the reader to run the package bin inside this repository', async () => {
    const wrong = /npx workers-ai-guard[^.;]*(?:in this repository|after `npm run build`)/i
    const problems: string[] = []
    for (const file of await markdownFiles()) {
      // Per paragraph, lines joined: the claim was split over two lines.
      for (const paragraph of (await read(file)).split(/\n\s*\n/)) {
        const text = paragraph.replace(/\s+/g, ' ')
        if (wrong.test(text)) problems.push(`${file}: ${wrong.exec(text)![0]}`)
      }
    }
    expect(problems).toEqual([])
    expect(JSON.parse(await read('package.json')).scripts.probe).toContain('src/tools/cli.ts probe')
  })

  // The public surface: every export of each entry point has its line in docs/api.md, and
  // nothing is listed there that the entry point does not export.
  it('should list every export of each entry point in docs/api.md, and only those', async () => {
    const api = await read('docs/api.md')
    const entries: [string, string][] = [
      ['workers-ai-guard', 'src/index.ts'],
      ['workers-ai-guard/adapters', 'src/adapters.ts'],
      ['workers-ai-guard/worker', 'src/worker/index.ts'],
    ]
    for (const [entry, path] of entries) {
      const section = api.split(`## \`${entry}\`\n`)[1]?.split('\n## ')[0] ?? ''
      const listed = tableKeys(section, 'export').sort()
      expect(listed, entry).toEqual(await entryExports(path))
    }
    // The lean entry: the default's surface without the secrets plug-in's value, its ways in listed.
    const lean = await entryExports('src/lean.ts')
    const full = await entryExports('src/index.ts')
    expect(lean).toEqual(full.filter((name) => name !== 'WORKER_SECRETS_DEFAULT'))
    const section = api.split('## `workers-ai-guard/lean`\n')[1]?.split('\n## ')[0] ?? ''
    expect(tableKeys(section, 'export').sort()).toEqual(['aiGuard', 'createGuard', 'guardAi'])
  })

  it('should link only to files and headings that exist', async () => {
    const broken: string[] = []
    for (const file of await markdownFiles()) {
      const dir = file.includes('/') ? file.slice(0, file.lastIndexOf('/') + 1) : ''
      for (const m of (await read(file)).matchAll(/\]\(([^)\s]+)\)/g)) {
        const [target = '', anchor] = m[1]!.split('#')
        if (/^[a-z]+:/.test(target)) continue
        const path = target === '' ? file : `${dir}${target}`
        const exists = await stat(path).then(
          () => true,
          () => false,
        )
        if (!exists) broken.push(`${file} → ${m[1]}`)
        else if (anchor !== undefined && path.endsWith('.md')) {
          if (!(await anchors(path)).has(anchor)) broken.push(`${file} → ${m[1]} (no such heading)`)
        }
      }
      // A file named in prose (`sim/README.md`, INCIDENT.md, src/core/verify/verdict.ts) must exist too,
      // from the file or the root: moved code must not leave the docs pointing at nothing.
      const named =
        /(?<![\w./{-])([\w./-]+\.md|(?:src|test|bench|scripts|sim|migrations)\/[\w./-]+\.(?:ts|json|toml|sh|sql))\b/g
      for (const m of (await read(file)).matchAll(named)) {
        const name = m[1]!.replace(/^\//, '')
        const found = await Promise.all(
          [`${dir}${name}`, name].map((p) =>
            stat(p).then(
              () => true,
              () => false,
            ),
          ),
        )
        if (!found.includes(true)) broken.push(`${file} names ${m[1]}`)
      }
    }
    expect(broken).toEqual([])
  })

  // The keyless threat table cites, per attack, the tests that try it: a renamed or deleted test must
  // not leave a row pointing at nothing.
  it("should cite in reliability.md's keyless threat table, per row, tests that exist by name", async () => {
    const lines = (await read('docs/reliability.md')).split('\n')
    const header = lines.findIndex((l) => l.startsWith('| attack | what happens | test'))
    expect(header).toBeGreaterThanOrEqual(0)
    const problems: string[] = []
    let cited = 0
    for (const line of lines.slice(header + 2)) {
      if (!line.startsWith('|')) break
      const refs = [...line.matchAll(/`(test\/[\w./-]+\.test\.ts)` › `([^`]+)`/g)]
      if (refs.length === 0) problems.push(`cites no test: ${line.slice(0, 70)}`)
      for (const [, file, name] of refs) {
        cited++
        const source = await read(file!).catch(() => '')
        const title = name!.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
        if (!new RegExp(`\\bit\\(\\s*(['"\`])${title}\\1`).test(source)) {
          problems.push(`${file} has no test "${name}"`)
        }
      }
    }
    expect(problems).toEqual([])
    expect(cited).toBeGreaterThanOrEqual(7)
  })

  it('should keep docs/ under 30,000 words, as `cat docs/*.md | wc -w` counts them', async () => {
    let words = 0
    for (const entry of await readdir('docs')) {
      if (entry.endsWith('.md')) words += wordCount(await read(`docs/${entry}`))
    }
    expect(words).toBeGreaterThan(5000)
    expect(words).toBeLessThanOrEqual(30_000)
  })

  it('should name no work session and no issue number in the README or docs', async () => {
    const found: string[] = []
    for (const file of await userDocs()) {
      for (const word of logWords(await read(file))) found.push(`${file}: ${word}`)
    }
    expect(found).toEqual([])
  })

  it('should name no work session and no issue number in a comment of src/, test/, bench/, scripts/ or sim/', async () => {
    const found: string[] = []
    let files = 0
    for (const dir of ['src', 'test', 'bench', 'scripts', 'sim']) {
      for (const entry of await readdir(dir, { recursive: true })) {
        if (!String(entry).endsWith('.ts')) continue
        files++
        const file = `${dir}/${entry}`
        for (const word of commentLogWords(await read(file))) found.push(`${file}: ${word}`)
      }
    }
    expect(files).toBeGreaterThan(400)
    expect(found).toEqual([])
  })

  it('should cite, for every measured figure, a bench/results file that holds it', async () => {
    const problems: string[] = []
    const results = await resultsFiles()
    for (const file of await userDocs()) {
      problems.push(...figureProblems(file, await read(file), results))
    }
    expect(problems).toEqual([])
  })

  it('should point the benchmarks page at every results file', async () => {
    const page = await read('docs/benchmarks.md')
    const missing = (await readdir('bench/results'))
      .filter((f) => f.endsWith('.json') && !/-quick\.json$/.test(f))
      .filter((f) => !page.includes(`bench/results/${f}`) && !page.includes(`\`${f}\``))
    expect(missing).toEqual([])
  })
})

/** The numbered work-log words in a source's comments; its strings (this file's test data) are not read. */
function commentLogWords(source: string): string[] {
  return comments(source).flatMap(numberedLogWords)
}

/** The README and docs/*.md: the pages held to the figure and word rules. */
async function userDocs(): Promise<string[]> {
  const docs = (await readdir('docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)
  return ['README.md', ...docs]
}

/** The results files' texts by path, for the figure check (it reads synchronously). */
async function resultsFiles(): Promise<(path: string) => string | null> {
  const texts = new Map<string, string>()
  for (const entry of await readdir('bench/results')) {
    texts.set(`bench/results/${entry}`, await read(`bench/results/${entry}`))
  }
  return (path) => texts.get(path) ?? null
}

describe('the docs rules fail on a doc made to break them', () => {
  const results = (path: string): string | null =>
    path === 'bench/results/peer.json'
      ? JSON.stringify({ rows: [{ added: { median: 4.8312 }, ratio: 0.512 }] })
      : null

  it('should pass a cited figure the results file holds, rounded as the doc writes it', () => {
    expect(
      figureProblems('ok.md', 'The guard adds 4.83 ms (bench/results/peer.json).', results),
    ).toEqual([])
    expect(
      figureProblems(
        'ok.md',
        'It runs at 51% of a pass-through (bench/results/peer.json).',
        results,
      ),
    ).toEqual([])
    expect(
      figureProblems('ok.md', 'The guard adds 4,831 µs (bench/results/peer.json).', results),
    ).toEqual([])
  })

  it('should flag a figure with no citation', () => {
    const problems = figureProblems('bad.md', 'The guard adds 4.83 ms to each request.', results)
    expect(problems).toHaveLength(1)
    expect(problems[0]).toContain('cites no bench/results file')
  })

  it('should flag a cited figure the file does not hold, and a file that does not exist', () => {
    expect(
      figureProblems('bad.md', 'It adds 9.99 ms (bench/results/peer.json).', results)[0],
    ).toContain('not in bench/results/peer.json')
    expect(
      figureProblems('bad.md', 'It adds 4.83 ms (bench/results/gone.json).', results)[0],
    ).toContain('missing')
  })

  it('should check each list item and table row on its own citation', () => {
    const list = '- adds 4.83 ms (bench/results/peer.json)\n- adds 4.83 ms'
    expect(figureProblems('bad.md', list, results)).toHaveLength(1)
    const table = '| a | b |\n|---|---|\n| x | 4.83 ms (bench/results/peer.json) |\n| y | 4.83 ms |'
    expect(figureProblems('bad.md', table, results)).toHaveLength(1)
  })

  it('should treat settings written as code, and plurals like 422s, as no measured figure', () => {
    expect(
      figureProblems('ok.md', 'The budget is `80 MiB`; the tests show the 422s.', results),
    ).toEqual([])
  })

  it('should flag work-log words, but not a cookie or code', () => {
    expect(logWords('Measured in session 21 (issue 45, issue #7).')).toEqual([
      'session',
      'issue 45',
      'issue #7',
    ])
    expect(logWords('A login cookie; the header `x-session-affinity`.')).toEqual([])
  })

  it('should flag a numbered session or issue in a comment, not in a string, template or regex', () => {
    expect(
      commentLogWords('const a = 1 // as issue 12 asked\n/* Session 3: */ const b = 2'),
    ).toEqual(['issue 12', 'Session 3'])
    expect(commentLogWords('/**\n * Issues #4 and 5.\n */\nexport {}')).toEqual(['Issues #4'])
    const code = [
      "const s = 'issue 12 // issue 13'",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source of a template, as text
      'const t = `https://x/${{ a: "issue 14" }.a} // issue 15`',
      'const r = /\\/\\/ issue 16 [/]/g.test(s) // the console session cookie',
      'const d = a / b / c',
    ].join('\n')
    expect(comments(code)).toEqual(['// the console session cookie'])
    expect(commentLogWords(code)).toEqual([])
  })

  it('should count words as wc -w does', () => {
    expect(wordCount(' one  two\nthree\t')).toBe(3)
    expect(wordCount('word '.repeat(30_001))).toBeGreaterThan(30_000)
  })
})
