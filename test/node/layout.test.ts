import { readdir, readFile } from 'node:fs/promises'
import { beforeAll, describe, expect, it } from 'vitest'
import { checkLayout, type LayoutReport, MAX_FUNCTION_LINES } from '../../scripts/layout'

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

  // The pipeline's stage folders import one way (issue 47). Options, the quarantine record and the
  // verdict's types live in src/vocabulary/, which every stage may import. One pair is left: the stream
  // path, where verify/ builds the release and release/ reads verify's canary redaction and echo watch.
  it('should have no two stage folders importing each other both ways, but the one left', async () => {
    expect(report.twoWayFolders.map((p) => p.pair)).toEqual(['release ↔ verify'])
  })

  // One authority on verdicts (issue 47): a Verdict is an object with an action and a score, and
  // only src/verify/verdict.ts writes one; every stage asks decide() (or decideReleased()). An action
  // followed by `|` is the type's union (src/vocabulary/verdict-types.ts), not a verdict.
  it("should write a verdict's action in src/verify/verdict.ts only", async () => {
    const literal =
      /\{[^{}]*\baction:\s*'(?:release|retry|quarantine|refuse)'\s*[,}\n][^{}]*\bscore\b[^{}]*\}|\{[^{}]*\bscore\b[^{}]*\baction:\s*'(?:release|retry|quarantine|refuse)'\s*[,}\n][^{}]*\}/g
    const writers: Record<string, number> = {}
    for (const file of await readdir('src', { recursive: true })) {
      if (!file.endsWith('.ts')) continue
      const found = (await readFile(`src/${file}`, 'utf8')).match(literal)?.length ?? 0
      if (found > 0) writers[`src/${file}`] = found
    }
    // The check finds decide()'s own verdicts (it can fail), and nothing anywhere else.
    expect(Object.keys(writers)).toEqual(['src/verify/verdict.ts'])
    expect(writers['src/verify/verdict.ts']).toBeGreaterThanOrEqual(5)
  })
})
