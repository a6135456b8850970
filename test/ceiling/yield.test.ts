import { describe, expect, it } from 'vitest'
import { estimateTexts } from '../../src/core/ceiling/estimate'
import { prose, rng } from './gen'

/**
 * A long prompt's scan shares its isolate: Workers runs an isolate's concurrent requests
 * one task at a time, so a scan in one task holds every other request until it ends. The scan lets
 * the isolate's other work run every few thousand pre-tokens (src/core/ceiling/yield.ts); a short text is
 * scanned in one task, costing ordinary requests no extra turn.
 */
describe('a long scan lets the isolate breathe', () => {
  /** The order in which a scan of `texts` and a timer set right after it began finished. */
  async function race(texts: string[]): Promise<string[]> {
    const order: string[] = []
    const scan = estimateTexts(texts).then(() => order.push('scan'))
    const timer = new Promise<void>((resolve) =>
      setTimeout(() => {
        order.push('timer')
        resolve()
      }, 0),
    )
    await Promise.all([scan, timer])
    return order
  }

  // 20,000 words: some 40,000 pre-tokens, ten turns of the scan.
  const long = prose(rng(46), 20_000)

  it("should let another request's timer run before a long prompt's scan ends", async () => {
    await estimateTexts(['warm the tokenizer and the family table'])
    expect(await race([long])).toEqual(['timer', 'scan'])
  })

  it('should scan a short prompt in one task', async () => {
    await estimateTexts(['warm the tokenizer and the family table'])
    expect(await race([prose(rng(47), 300)])).toEqual(['scan', 'timer'])
  })

  // Interleaved scans share the tokenizer's merge memo: another request's text scanned between the
  // turns of this one must not change what this one counts.
  it('should count each of two interleaved scans as it counts alone', async () => {
    const other = prose(rng(48), 20_000)
    const alone = [await estimateTexts([long]), await estimateTexts([other])]
    const together = await Promise.all([estimateTexts([long]), estimateTexts([other])])
    expect(together).toEqual(alone)
  })
})
