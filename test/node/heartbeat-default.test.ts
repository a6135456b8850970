import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { resolveOptions } from '../../src/core/vocabulary/options'

/**
 * The heartbeat's defaults, as configured and as documented: the deployed Worker beats
 * every 15 s (wrangler.toml), the local one (wrangler.dev.toml: `npm start`, the tests) and the
 * library (`stream.heartbeatMs`) do not. What the client receives either way: test/worker/heartbeat.test.ts;
 * why 15 s: docs/streaming.md, "Heartbeat", measured by `npm run bench -- silent-stream`.
 */
const read = (path: string): Promise<string> => readFile(path, 'utf8')

/** The value of `GUARD_HEARTBEAT_MS` in a wrangler config's `[vars]`, if it sets one. */
function heartbeatVar(toml: string): string | undefined {
  const vars = toml.split(/^\[vars\]$/m)[1]?.split(/^\[/m)[0] ?? ''
  return /^GUARD_HEARTBEAT_MS\s*=\s*"([^"]*)"/m.exec(vars)?.[1]
}

describe('the heartbeat default', () => {
  it('should beat every 15 s in the deployed Worker only', async () => {
    expect(heartbeatVar(await read('wrangler.toml'))).toBe('15000')
    expect(heartbeatVar(await read('wrangler.dev.toml'))).toBeUndefined()
    // The option's own default stays off: a library stream that fails after run() returned needs a
    // response path that turns the failure into an error event.
    const secret = 'a-guard-secret-of-at-least-32-bytes!'
    expect(resolveOptions({ secret }).heartbeatMs).toBe(0)
    expect(resolveOptions({ secret, stream: { heartbeatMs: 15_000 } }).heartbeatMs).toBe(15_000)
  })

  it('should say so where readers look: the README and the Heartbeat section of docs/streaming.md', async () => {
    const streaming = await read('docs/streaming.md')
    const section =
      streaming.split('## Heartbeat (`stream.heartbeatMs`)')[1]?.split('\n## ')[0] ?? ''
    expect(section).toContain('every `15 s` in the deployed Worker, off in the library')
    expect(section).toContain('`GUARD_HEARTBEAT_MS = "15000"`')
    expect(await read('README.md')).toMatch(
      /`: held` comment every `15 s`[^|]*\(docs\/streaming\.md#heartbeat-streamheartbeatms\)/,
    )
  })
})
