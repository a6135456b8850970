import { readdir, readFile, stat } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { comments } from '../support/source-comments'

/**
 * `npm test` needs nothing but Node: what needs a Debian package (Chromium, the Prometheus project's
 * Python parser, Debian's text corpora under /usr/share) runs in `npm run test:slow`. No file `npm test`
 * runs, nor any local module it imports, names such a dependency in its code (comments may say where
 * they are needed).
 */
const SYSTEM = /\/usr\/share\/|\/usr\/bin\/(?:chromium|python)|puppeteer|python3|\bdpkg\b/

/** `source` without its comments. */
function code(source: string): string {
  let out = source
  for (const comment of comments(source)) out = out.replace(comment, ' ')
  return out
}

/** The test files `test:slow` runs: the node files vitest.config.ts lists (its SLOW and ALONE). */
async function slowFiles(): Promise<Set<string>> {
  const config = await readFile('vitest.config.ts', 'utf8')
  return new Set([...config.matchAll(/'(test\/node\/[\w-]+\.test\.ts)'/g)].map((m) => m[1]!))
}

/** The local modules `source` (at `path`) imports, as paths from the root. */
async function localImports(path: string, source: string): Promise<string[]> {
  const dir = path.slice(0, path.lastIndexOf('/'))
  const out: string[] = []
  for (const m of source.matchAll(/(?:from|import\()\s*'(\.\.?\/[^']+)'/g)) {
    const parts = `${dir}/${m[1]}`.split('/')
    const resolved: string[] = []
    for (const part of parts) {
      if (part === '..') resolved.pop()
      else if (part !== '.') resolved.push(part)
    }
    const base = resolved.join('/')
    for (const candidate of [base, `${base}.ts`, `${base}/index.ts`]) {
      if (
        await stat(candidate).then(
          (s) => s.isFile(),
          () => false,
        )
      ) {
        out.push(candidate)
        break
      }
    }
  }
  return out
}

/** The files of `roots` and every local module they import, with the text of each. */
async function withImports(roots: string[]): Promise<Map<string, string>> {
  const seen = new Map<string, string>()
  const queue = [...roots]
  while (queue.length > 0) {
    const path = queue.pop()!
    if (seen.has(path)) continue
    const source = await readFile(path, 'utf8')
    seen.set(path, source)
    if (path.endsWith('.ts')) queue.push(...(await localImports(path, source)))
  }
  return seen
}

describe('npm test needs only Node', () => {
  it('should name no system package in a file npm test runs or in what it imports', async () => {
    const slow = await slowFiles()
    const tests = (await readdir('test', { recursive: true }))
      .map((f) => `test/${f}`)
      .filter((f) => f.endsWith('.test.ts') && !slow.has(f) && f !== 'test/node/node-only.test.ts')
    expect(tests.length).toBeGreaterThan(100)
    const found: string[] = []
    for (const [path, source] of await withImports(tests)) {
      const hit = SYSTEM.exec(code(source))
      if (hit) found.push(`${path}: ${hit[0]}`)
    }
    expect(found).toEqual([])
  })

  // Must fire: the slow files that do need them are found by the same scan.
  it('should find them in the slow files that need them', async () => {
    const files = await withImports([
      'test/node/console-browser.test.ts',
      'test/node/openmetrics-strict.test.ts',
      'test/node/held-apart.test.ts',
    ])
    const hits = [...files].filter(([, source]) => SYSTEM.test(code(source))).map(([path]) => path)
    expect(hits).toEqual(
      expect.arrayContaining([
        'test/node/console-browser.test.ts',
        'test/node/openmetrics-strict.test.ts',
        'test/held-apart/corpus.ts',
      ]),
    )
  })
})
