/**
 * @module The console's login brake as pure code, on an injected clock: per client, by /64 for IPv6,
 * no isolate-wide cap, least recently failed forgotten first — and an attacker trying to use each of
 * those against the operator.
 */
import { describe, expect, it } from 'vitest'
import { LoginLimiter } from '../../src/worker/admin/auth'

const MINUTE = 60_000

function failTimes(limiter: LoginLimiter, client: string, n: number, at: number): void {
  for (let i = 0; i < n; i++) limiter.fail(client, at)
}

describe('LoginLimiter', () => {
  it('should slow a client after its fifth failure for the rest of the minute, then let it try again', () => {
    const limiter = new LoginLimiter()
    failTimes(limiter, '192.0.2.1', 4, 0)
    expect(limiter.retryAfter('192.0.2.1', 1_000)).toBe(0)
    limiter.fail('192.0.2.1', 1_000)
    expect(limiter.retryAfter('192.0.2.1', 1_000)).toBe(MINUTE - 1_000)
    expect(limiter.retryAfter('192.0.2.1', MINUTE)).toBe(0)
  })

  it('should never refuse a client that has not failed, whatever every other address did', () => {
    const limiter = new LoginLimiter()
    for (let n = 0; n < 100_000; n++)
      failTimes(limiter, `10.${n >> 16}.${(n >> 8) & 255}.${n & 255}`, 5, 0)
    expect(limiter.retryAfter('198.51.100.1', 1)).toBe(0)
    expect(limiter.retryAfter('2001:db8::1', 1)).toBe(0)
  })

  it('should keep a guesser slowed while fewer than its capacity of other clients fail after it', () => {
    const limiter = new LoginLimiter(1_000)
    failTimes(limiter, 'guesser', 5, 0)
    for (let n = 0; n < 999; n++) limiter.fail(`other-${n}`, 1)
    expect(limiter.retryAfter('guesser', 2)).toBeGreaterThan(0)
    // The attacker's price for a fresh count: a full capacity of other clients failing after it.
    limiter.fail('other-999', 3)
    expect(limiter.retryAfter('guesser', 4)).toBe(0)
  })

  it('should forget the least recently failed first: a guesser that keeps failing stays slowed', () => {
    const limiter = new LoginLimiter(100)
    failTimes(limiter, 'guesser', 5, 0)
    for (let round = 0; round < 10; round++) {
      for (let n = 0; n < 60; n++) limiter.fail(`flood-${round}-${n}`, round)
      // Each failure moves a client to the back: one that keeps guessing is never the oldest.
      limiter.fail('guesser', round)
    }
    expect(limiter.retryAfter('guesser', 10)).toBeGreaterThan(0)
  })

  it('should count an IPv6 client by its /64, in every spelling, and IPv4-mapped by its IPv4 address', () => {
    const limiter = new LoginLimiter()
    for (const address of [
      '2001:db8:1:2::1',
      '2001:0db8:0001:0002:ffff:ffff:ffff:ffff',
      '2001:DB8:1:2:0:0:0:9',
      '2001:db8:1:2::a%eth0',
      '2001:db8:1:2:1::',
    ]) {
      limiter.fail(address, 0)
    }
    expect(limiter.retryAfter('2001:db8:1:2::abcd', 1)).toBeGreaterThan(0)
    expect(limiter.retryAfter('2001:db8:1:3::1', 1)).toBe(0)
    expect(limiter.retryAfter('2001:db8::1', 1)).toBe(0)
    failTimes(limiter, '::ffff:203.0.113.5', 5, 0)
    expect(limiter.retryAfter('203.0.113.5', 1)).toBeGreaterThan(0)
    expect(limiter.retryAfter('::ffff:203.0.113.6', 1)).toBe(0)
  })
})
