import { describe, expect, it } from 'vitest'
import { AlertLimiter } from '../../src/worker/alerts'

function clock(start = 1_000_000) {
  let t = start
  return {
    now: () => t,
    advance: (ms: number) => {
      t += ms
    },
  }
}

describe('AlertLimiter', () => {
  it('should send one alert per incident id per window, counting repeats for the next alert', () => {
    const c = clock()
    const limiter = new AlertLimiter({ now: c.now, dedupeWindowMs: 600_000 })
    expect(limiter.admit('operator', 'inc_1')).toEqual({ send: true, suppressed: 0 })
    expect(limiter.admit('operator', 'inc_1')).toEqual({ send: false, reason: 'duplicate' })
    c.advance(599_999)
    expect(limiter.admit('operator', 'inc_1')).toEqual({ send: false, reason: 'duplicate' })
    expect(limiter.admit('operator', 'inc_2')).toEqual({ send: true, suppressed: 2 })
    c.advance(1)
    // The window has passed: the same record alerts again (a long-running incident is re-announced).
    expect(limiter.admit('operator', 'inc_1')).toEqual({ send: true, suppressed: 0 })
  })

  it('should keep destinations apart', () => {
    const limiter = new AlertLimiter({ now: clock().now })
    expect(limiter.admit('operator', 'inc_1').send).toBe(true)
    expect(limiter.admit('tenant:a', 'inc_1').send).toBe(true)
    expect(limiter.admit('tenant:a', 'inc_1').send).toBe(false)
  })

  it('should spend a burst, then refill at the rate, carrying the suppressed count', () => {
    const c = clock()
    const limiter = new AlertLimiter({ now: c.now, burst: 3, perMinute: 6 })
    for (let i = 0; i < 3; i++) expect(limiter.admit('operator', `inc_${i}`).send).toBe(true)
    for (let i = 3; i < 8; i++) {
      expect(limiter.admit('operator', `inc_${i}`)).toEqual({ send: false, reason: 'rate_limited' })
    }
    c.advance(9_999) // 6 a minute: one token every 10 s
    expect(limiter.admit('operator', 'inc_8').send).toBe(false)
    c.advance(1)
    expect(limiter.admit('operator', 'inc_9')).toEqual({ send: true, suppressed: 6 })
    expect(limiter.admit('operator', 'inc_10').send).toBe(false)
    // A rate-limited id was never alerted: it may alert once there is a token.
    c.advance(10_000)
    expect(limiter.admit('operator', 'inc_3')).toEqual({ send: true, suppressed: 1 })
  })

  it('should never hold more than its burst, however long it was idle', () => {
    const c = clock()
    const limiter = new AlertLimiter({ now: c.now, burst: 2, perMinute: 60 })
    c.advance(24 * 3600_000)
    expect(limiter.admit('d', 'a').send).toBe(true)
    expect(limiter.admit('d', 'b').send).toBe(true)
    expect(limiter.admit('d', 'c').send).toBe(false)
  })

  it('should remember at most maxIds incident ids, forgetting the oldest', () => {
    const c = clock()
    const limiter = new AlertLimiter({ now: c.now, burst: 1000, maxIds: 3 })
    for (const id of ['1', '2', '3', '4']) expect(limiter.admit('d', id).send).toBe(true)
    expect(limiter.admit('d', '4').send).toBe(false)
    expect(limiter.admit('d', '2').send).toBe(false)
    // '1' was forgotten: bounded memory means at worst one more alert, never one fewer.
    expect(limiter.admit('d', '1').send).toBe(true)
  })
})
