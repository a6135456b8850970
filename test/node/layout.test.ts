import { describe, expect, it } from 'vitest'
import { checkLayout, MAX_FUNCTION_LINES } from '../../scripts/layout'

/**
 * The shape of src/ that `npm run layout` reports, held: the pipeline runs one way (no import circle,
 * type-only imports included), no two files share a base name, and every function fits a screen.
 */
describe('src/ layout', () => {
  it(`should have no import circle, no shared base name and no function over ${MAX_FUNCTION_LINES} lines`, async () => {
    const report = await checkLayout('src')
    expect(report.files).toBeGreaterThan(50)
    expect(report.cycles).toEqual([])
    expect(report.sharedNames).toEqual({})
    expect(report.longest.filter((f) => f.lines > MAX_FUNCTION_LINES)).toEqual([])
    expect(report.tooLong).toBe(0)
  })
})
