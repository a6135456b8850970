import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { privateExports } from '../../scripts/exports'
import {
  checkLayout,
  type LayoutReport,
  MAX_FUNCTION_LINES,
  MAX_PARAMS,
} from '../../scripts/layout'

/**
 * The shape of src/ that `npm run layout` reports, held: the pipeline runs one way (no import circle,
 * type-only imports included), no two files share a base name, and every function fits a screen.
 */
describe('src/ layout', () => {
  // One reading of src/ for every check below.
  let report: LayoutReport
  beforeAll(async () => {
    report = await checkLayout('src')
  })

  it(`should have no import circle, no shared base name and no function over ${MAX_FUNCTION_LINES} lines`, async () => {
    expect(report.files).toBeGreaterThan(50)
    expect(report.cycles).toEqual([])
    expect(report.sharedNames).toEqual({})
    expect(report.longest.filter((f) => f.lines > MAX_FUNCTION_LINES)).toEqual([])
    expect(report.tooLong).toBe(0)
  })

  it(`should have no function taking more than ${MAX_PARAMS} positional parameters`, () => {
    expect(report.tooManyParams).toEqual([])
  })

  // The parameter rule on a tree made to break it: five positional parameters are reported (a
  // method, an arrow, a declaration), four and one destructured object are not.
  it('should report every function over the parameter limit by file, line and name', async () => {
    const root = await mkdtemp(join(tmpdir(), 'params-'))
    await mkdir(join(root, 'plan'), { recursive: true })
    await writeFile(
      join(root, 'plan', 'admit.ts'),
      [
        'export function admit(a: number, b: number, c: number, d: number, e: number) {}',
        'export function fits(a: number, b: number, c: number, d: number) {}',
        'export function grouped({ a, b, c, d, e }: Record<string, number>) {}',
        'export const arrow = (a: 1, b: 2, c: 3, d: 4, ...rest: number[]) => rest',
        'export class Guard {',
        '  run(a: 1, b: 2, c: 3, d: 4, e: 5, f: 6) {}',
        '}',
        '',
      ].join('\n'),
    )
    const broken = await checkLayout(root)
    expect(broken.tooManyParams).toEqual([
      `${root}/plan/admit.ts:1:admit (5)`,
      `${root}/plan/admit.ts:4:arrow (5)`,
      `${root}/plan/admit.ts:6:run (6)`,
    ])
    await rm(root, { recursive: true, force: true })
  })

  // The pipeline's stage folders import one way. Options, the quarantine record, the
  // verdict's types, the request's facts and the release's judge live in src/core/vocabulary/, which every
  // stage may import.
  it('should have no two stage folders importing each other both ways, and no import the wrong way', async () => {
    expect(report.twoWayFolders).toEqual([])
    expect(report.wrongWay).toEqual([])
  })

  // The same checks on a tree made to break them: they can fail.
  it('should report stage folders both ways and each direction rule broken', async () => {
    const root = await mkdtemp(join(tmpdir(), 'layout-'))
    const files: Record<string, string> = {
      'core/release/queue.ts':
        "import { scan } from '../canary/scan'\nimport type { V } from '../verify/v'\n",
      'core/verify/v.ts': "import { q } from '../release/queue'\nexport type V = 1\n",
      'core/canary/scan.ts': 'export const scan = 1\n',
      'core/attempt/context.ts': "import type { P } from '../plan/p'\n",
      'core/plan/p.ts': "import { G } from '../guard/g'\nexport type P = 1\n",
      'core/guard/g.ts': 'export const G = 1\n',
    }
    for (const [file, text] of Object.entries(files)) {
      await mkdir(join(root, file, '..'), { recursive: true })
      await writeFile(join(root, file), text)
    }
    const broken = await checkLayout(root)
    expect(broken.twoWayFolders.map((p) => p.pair)).toEqual(['release ↔ verify'])
    expect(broken.wrongWay.map((w) => w.rule)).toEqual([
      'no stage imports the guard: plan → guard',
      'the attempt depends on no stage: attempt → plan',
      'the release reads only its judge: release → canary',
      'the release reads only its judge: release → verify',
      'verify/ does not build the release: verify → release',
    ])
    await rm(root, { recursive: true, force: true })
  })

  // The four wings (scripts/layout.ts WINGS): through faces only, and one way — the core imports no
  // plug-in, app or tool; the Worker and the tools use the others' faces.
  it('should keep every import across wings on a face, one way, and every file in a wing', () => {
    expect(report.wings).toEqual([])
    expect(report.outsideWings).toEqual([])
  })

  it('should report an import past a face, a core importing a plug-in, a wing importing an entry, and a stray file', async () => {
    const root = await mkdtemp(join(tmpdir(), 'wings-'))
    const files: Record<string, string> = {
      'index.ts': "export { G } from './core'\n",
      'core/index.ts': "export { G } from './guard/g'\n",
      'core/guard/g.ts': "import { P } from '../../plugins/secrets'\nexport const G = P\n",
      'plugins/secrets/index.ts': "export { P } from './p'\n",
      'plugins/secrets/p.ts': "import { G } from '../../core/guard/g'\nexport const P = 1\n",
      'worker/app.ts': "import { G } from '../index'\nimport { T } from '../tools'\n",
      'tools/index.ts': 'export const T = 1\n',
      'stray/x.ts': 'export const X = 1\n',
    }
    for (const [file, text] of Object.entries(files)) {
      await mkdir(join(root, file, '..'), { recursive: true })
      await writeFile(join(root, file), text)
    }
    const broken = await checkLayout(root)
    expect(broken.wings.map((w) => w.rule)).toEqual([
      'core may not use plugins/secrets',
      'no wing imports a package entry: worker',
      'only through the face of core: plugins/secrets → core',
      'worker may not use tools',
    ])
    expect(broken.outsideWings).toEqual([`${root}/stray/x.ts`])
    await rm(root, { recursive: true, force: true })
  })

  // No test hooks: what tests, benchmarks or scripts need of src/ they reach through what
  // src/ itself uses.
  it('should export nothing that only tests, benchmarks or scripts import, nor what nobody imports', () => {
    expect(report.exports.outsideOnly.map((e) => e.name)).toEqual([])
    expect(report.exports.unused).toEqual([])
  })

  it('should report an export only a test imports, and one nobody imports', async () => {
    const top = await mkdtemp(join(tmpdir(), 'exports-'))
    await mkdir(join(top, 'src', 'guard'), { recursive: true })
    await mkdir(join(top, 'test'), { recursive: true })
    await writeFile(
      join(top, 'src', 'guard', 'g.ts'),
      'export const used = 1\nexport const hook = 2\nexport const lost = 3\n',
    )
    await writeFile(join(top, 'src', 'index.ts'), "export { used } from './guard/g'\n")
    await writeFile(join(top, 'test', 'g.test.ts'), "import { hook } from '../src/guard/g'\n")
    const found = await privateExports(join(top, 'src'), [join(top, 'test')])
    expect(found.outsideOnly.map((e) => e.name)).toEqual([`${join(top, 'src')}/guard/g.ts#hook`])
    expect(found.unused).toEqual([`${join(top, 'src')}/guard/g.ts#lost`])
    await rm(top, { recursive: true, force: true })
  })

  // One authority on verdicts: a Verdict is an object with an action and a score, and
  // only src/core/verify/verdict.ts writes one; every stage asks decide() (or decideReleased()). An action
  // followed by `|` is the type's union (src/core/vocabulary/verdict-types.ts), not a verdict.
  it("should write a verdict's action in src/core/verify/verdict.ts only", async () => {
    const literal =
      /\{[^{}]*\baction:\s*'(?:release|retry|quarantine|refuse)'\s*[,}\n][^{}]*\bscore\b[^{}]*\}|\{[^{}]*\bscore\b[^{}]*\baction:\s*'(?:release|retry|quarantine|refuse)'\s*[,}\n][^{}]*\}/g
    const writers: Record<string, number> = {}
    for (const file of await readdir('src', { recursive: true })) {
      if (!file.endsWith('.ts')) continue
      const found = (await readFile(`src/${file}`, 'utf8')).match(literal)?.length ?? 0
      if (found > 0) writers[`src/${file}`] = found
    }
    // The check finds decide()'s own verdicts (it can fail), and nothing anywhere else.
    expect(Object.keys(writers)).toEqual(['src/core/verify/verdict.ts'])
    expect(writers['src/core/verify/verdict.ts']).toBeGreaterThanOrEqual(5)
  })

  // Learned state is taught once, from the outcome: only the orchestrator imports what
  // teaches calibration; verification says what an answer can teach (its Lesson), the call stage
  // keeps the engine's refusal as its error's cause.
  it('should teach learned state from src/core/guard/attempts.ts only', async () => {
    const teachers: string[] = []
    for (const file of await readdir('src', { recursive: true })) {
      if (!file.endsWith('.ts') || file === 'calibration/teach.ts') continue
      const text = await readFile(`src/${file}`, 'utf8')
      if (/from '[./]*(?:calibration\/)?teach'/.test(text)) teachers.push(`src/${file}`)
    }
    expect(teachers).toEqual(['src/core/guard/attempts.ts'])
  })
})
