import { readdir, readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'

/**
 * The Worker is built on the public surface, as a user's app would be (issue 47): nothing under
 * src/worker/ imports src/guard/ — it makes its guard with `createGuard` and reads it through `AiGuard`.
 * Self-contained (its own reading of the imports), so it holds whatever scripts/layout.ts reports.
 */

/** Every module specifier a file names: `import … from`, `export … from`, `import '…'`, `import('…')`. */
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"`])([^'"`\n]+)\1/g

/**
 * The imports of `files` (path under src/ → text) that land in src/guard/, as `file → specifier`.
 * A relative specifier is resolved against its file; `src/guard`, `src/guard/…` (with or without an
 * extension or `/index`) all count.
 */
function guardImports(files: Record<string, string>): string[] {
  const found: string[] = []
  for (const [file, text] of Object.entries(files)) {
    for (const [, , specifier] of text.matchAll(SPECIFIER)) {
      if (!specifier?.startsWith('.')) continue
      const target = resolve(`src/${file}`, specifier)
      if (target === 'src/guard' || target.startsWith('src/guard/')) {
        found.push(`src/${file} → ${specifier}`)
      }
    }
  }
  return found
}

/** Where a relative `specifier` in `file` points: `..` and `.` resolved, as a path from the root. */
function resolve(file: string, specifier: string): string {
  const parts = file.split('/').slice(0, -1)
  for (const part of specifier.split('/')) {
    if (part === '..') parts.pop()
    else if (part !== '.' && part !== '') parts.push(part)
  }
  return parts.join('/')
}

/** Every `.ts` file under src/worker/, recursively, as path under src/ → text. */
async function workerFiles(): Promise<Record<string, string>> {
  const files: Record<string, string> = {}
  for (const entry of await readdir('src/worker', { recursive: true })) {
    const name = String(entry).split('\\').join('/')
    if (!name.endsWith('.ts')) continue
    files[`worker/${name}`] = await readFile(`src/worker/${name}`, 'utf8')
  }
  return files
}

describe('the Worker reaches the guard through the public surface', () => {
  it('should import nothing from src/guard/ in any file under src/worker/', async () => {
    const files = await workerFiles()
    // The scan reads the whole Worker: its routes, its config and the console's nested pages.
    expect(Object.keys(files)).toEqual(
      expect.arrayContaining([
        'worker/app.ts',
        'worker/config.ts',
        'worker/models.ts',
        'worker/admin/index.ts',
      ]),
    )
    expect(Object.keys(files).some((f) => f.split('/').length > 3)).toBe(true)
    expect(guardImports(files)).toEqual([])
  })

  // The same check on imports made to break it (the Worker's own before issue 47 among them): it can fail.
  it('should report every way of naming src/guard/, and nothing else', () => {
    const broken = guardImports({
      'worker/config.ts': "import { Guard } from '../guard'\n",
      'worker/models.ts': "import type { Guard } from '../guard'\n",
      'worker/app.ts': 'import { guardInfo } from "../guard/index.ts"\n',
      'worker/admin/index.ts':
        "import type { Guard } from '../../guard/guard'\nexport { guardInfo } from '../../guard'\n",
      'worker/admin/pages/x.ts': "const lazy = await import('../../../guard/guard-info')\n",
      'worker/side.ts': "import '../guard/verdict-log'\n",
    })
    expect(broken).toEqual([
      'src/worker/config.ts → ../guard',
      'src/worker/models.ts → ../guard',
      'src/worker/app.ts → ../guard/index.ts',
      'src/worker/admin/index.ts → ../../guard/guard',
      'src/worker/admin/index.ts → ../../guard',
      'src/worker/admin/pages/x.ts → ../../../guard/guard-info',
      'src/worker/side.ts → ../guard/verdict-log',
    ])
    const fine = guardImports({
      'worker/config.ts': "import { createGuard } from '../surfaces/guard-ai'\n",
      'worker/app.ts': "import { guardInfo } from '../index'\nimport { x } from './guard'\n",
      'worker/admin/index.ts':
        "import { y } from '../guard-log'\nimport { z } from '../../guardian'\n",
    })
    expect(fine).toEqual([])
  })
})
