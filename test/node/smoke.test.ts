import { describe, expect, it } from 'vitest'

describe('node smoke', () => {
  it('should run on Node 22 or newer', () => {
    expect(Number(process.versions.node.split('.')[0])).toBeGreaterThanOrEqual(22)
  })
})
