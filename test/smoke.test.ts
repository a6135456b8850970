import { env, SELF } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'

describe('smoke', () => {
  it('should reach the simulator through the AI binding', async () => {
    const res = await SELF.fetch('http://x/')
    expect(await res.json()).toEqual({ model: 'm', echo: { a: 1 } })
    expect(env).toBeDefined()
  })
})
