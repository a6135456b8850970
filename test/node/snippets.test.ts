import { beforeAll, describe, expect, it } from 'vitest'
import { type NodeHost, nodeHost } from '../ecosystem/node-host'
import { STARTER_SCRIPTS } from '../support/starter'

/**
 * Every code snippet of the README and the docs is a copy of a region of a file that is compiled
 * somewhere: each ```ts/```js block follows a `<!-- snippet: path#region -->` marker, and must equal
 * that region (`// #region name` … `// #endregion`, or `# #region` in TOML; nested markers dropped,
 * common indentation removed). The files are type-checked by `npm run typecheck`, by the examples'
 * tests, or (examples/consumer, which imports the package by name) by scripts/check-consumer.sh.
 *
 * `UPDATE_SNIPPETS=1 npx vitest run --project node test/node/snippets.test.ts` rewrites every marked
 * block from its region.
 */
const DOCS = ['README.md', 'sim/README.md']
const DOC_DIRS = ['docs', 'examples']
const CODE = /^(ts|typescript|js|javascript|tsx|jsx|mjs)$/
const MARKER = /^<!--\s*snippet:\s*([^#\s]+)(?:#([\w-]+))?\s*-->$/

interface Block {
  doc: string
  /** 1-based line of the opening fence. */
  line: number
  lang: string
  /** Index of the first and past-the-last content line. */
  start: number
  end: number
  text: string
  marker?: { path: string; region?: string }
}

let host: NodeHost
let docs: string[] = []

beforeAll(async () => {
  host = await nodeHost()
  const fs = (await import('node:fs' as string)) as { readdirSync(path: string): string[] }
  docs = [...DOCS]
  for (const dir of DOC_DIRS) {
    for (const name of fs.readdirSync(host.join(host.cwd, dir))) {
      if (name.endsWith('.md')) docs.push(`${dir}/${name}`)
      else if (host.exists(host.join(host.cwd, dir, name, 'README.md'))) {
        docs.push(`${dir}/${name}/README.md`)
      }
    }
  }
})

/** The fenced blocks of a Markdown file, with the snippet marker before each, if any. */
function blocks(doc: string, lines: string[]): Block[] {
  const found: Block[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = lines[i]!.match(/^(\s*)(```+|~~~+)\s*([\w-]*)/)
    if (!open) continue
    const fence = open[2]!
    let end = i + 1
    while (end < lines.length && !lines[end]!.trimStart().startsWith(fence)) end++
    let prev = i - 1
    while (prev >= 0 && lines[prev]!.trim() === '') prev--
    const m = prev >= 0 ? lines[prev]!.trim().match(MARKER) : null
    found.push({
      doc,
      line: i + 1,
      lang: open[3] ?? '',
      start: i + 1,
      end,
      text: lines.slice(i + 1, end).join('\n'),
      ...(m ? { marker: { path: m[1]!, ...(m[2] ? { region: m[2] } : {}) } } : {}),
    })
    i = end
  }
  return found
}

/** The text of a region of a file (or the whole file), as a snippet shows it. */
function region(path: string, name: string | undefined): string {
  const lines = host.read(host.join(host.cwd, path)).split('\n')
  const start = /^\s*(\/\/|#)\s*#region\s+([\w-]+)\s*$/
  const stop = /^\s*(\/\/|#)\s*#endregion\b/
  let body: string[]
  if (name === undefined) {
    body = lines
  } else {
    const from = lines.findIndex((l) => l.match(start)?.[2] === name)
    if (from < 0) throw new Error(`${path} has no region "${name}"`)
    body = []
    let depth = 1
    for (const line of lines.slice(from + 1)) {
      if (start.test(line)) depth++
      else if (stop.test(line) && --depth === 0) break
      else body.push(line)
    }
    if (depth !== 0) throw new Error(`${path}: region "${name}" is never closed`)
  }
  body = body.filter((l) => !start.test(l) && !stop.test(l))
  while (body.length && body[0]!.trim() === '') body.shift()
  while (body.length && body[body.length - 1]!.trim() === '') body.pop()
  const indent = Math.min(
    ...body.filter((l) => l.trim() !== '').map((l) => l.length - l.trimStart().length),
  )
  return body.map((l) => l.slice(Number.isFinite(indent) ? indent : 0)).join('\n')
}

describe('README and docs snippets', () => {
  it('should mark every code block with the file region it is copied from, and match it', () => {
    const update = host.env.UPDATE_SNIPPETS === '1'
    const problems: string[] = []
    let checked = 0
    for (const doc of docs) {
      const path = host.join(host.cwd, doc)
      const lines = host.read(path).split('\n')
      const found = blocks(doc, lines)
      let changed = false
      // From the end, so replacing one block keeps the line numbers of those before it.
      for (const block of found.reverse()) {
        const where = `${block.doc}:${block.line}`
        if (!block.marker) {
          if (CODE.test(block.lang)) {
            problems.push(
              `${where}: a \`\`\`${block.lang} block without <!-- snippet: path#region -->`,
            )
          }
          continue
        }
        let expected: string
        try {
          expected = region(block.marker.path, block.marker.region)
        } catch (error) {
          problems.push(`${where}: ${(error as Error).message}`)
          continue
        }
        checked++
        if (expected === block.text) continue
        if (update) {
          lines.splice(block.start, block.end - block.start, ...expected.split('\n'))
          changed = true
        } else {
          problems.push(
            `${where}: differs from ${block.marker.path}#${block.marker.region ?? ''} ` +
              '(UPDATE_SNIPPETS=1 rewrites it)',
          )
        }
      }
      if (changed) host.write(path, lines.join('\n'))
    }
    expect(problems).toEqual([])
    expect(checked).toBeGreaterThan(0)
  })

  it('should find the README consumer install block scripts/check-consumer.sh runs', () => {
    const readme = host.read(host.join(host.cwd, 'README.md'))
    const block = readme.split('<!-- consumer:install -->')[1]?.match(/```sh\n([\s\S]*?)```/)?.[1]
    expect(block).toMatch(/^npm i workers-ai-guard /m)
    // Pinned ranges: on Node 20 a bare `wrangler` resolves to 4.86, which refuses the compatibility date;
    // and a wrangler newer than the one tested may want a workers-types the registry does not have yet
    // (4.168.0 wanted ^5.20261123.1; npm then installed no workers-types and tsc failed): patches only.
    expect(block).toMatch(/wrangler@~4\.1\d\d/)
    // The starter from the package, then its scripts: `types` is `wrangler types`, `check` is tsc.
    expect(block).toMatch(/^npx workers-ai-guard init/m)
    expect(block).toMatch(/^npm run types/m)
    expect(block).toMatch(/^npm run check/m)
    expect(STARTER_SCRIPTS.types).toMatch(/^wrangler types /)
    expect(STARTER_SCRIPTS.check).toMatch(/^tsc /)
  })

  it('should type-check the files the docs snippets are copied from', async () => {
    const tsc = host.join(host.cwd, 'node_modules/.bin/tsc')
    await host.run(tsc, ['--noEmit', '-p', 'examples/snippets'], { cwd: host.cwd })
  }, 60_000)

  it('should type-check examples/consumer against this source, with the Env wrangler types gives', async () => {
    // CI's scripts/check-consumer.sh does this on the packed package in a fresh project; this is the
    // quick version for `npm test`: the package names map to src/, the types come from its wrangler.toml.
    const dir = host.tempDir('guard-consumer-types-')
    try {
      const env = { ...host.env, WRANGLER_SEND_METRICS: 'false', CI: '1' }
      const bin = (name: string) => host.join(host.cwd, 'node_modules/.bin', name)
      const consumer = host.join(host.cwd, 'examples/consumer')
      const types = host.join(dir, 'worker-configuration.d.ts')
      await host.run(
        bin('wrangler'),
        ['types', types, '-c', host.join(consumer, 'wrangler.toml'), '--include-runtime=false'],
        { cwd: consumer, env },
      )
      host.write(
        host.join(dir, 'tsconfig.json'),
        JSON.stringify({
          extends: host.join(consumer, 'tsconfig.json'),
          compilerOptions: {
            paths: { 'workers-ai-guard': [host.join(host.cwd, 'src/index.ts')] },
            // The temporary directory has no node_modules of its own: types resolve from the repository's.
            typeRoots: [host.join(host.cwd, 'node_modules')],
          },
          include: [host.join(consumer, 'src'), types],
        }),
      )
      await host.run(bin('tsc'), ['--noEmit', '-p', dir], { cwd: host.cwd })
    } finally {
      host.remove(dir)
    }
  }, 60_000)
})
