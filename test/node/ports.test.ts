import { describe, expect, it } from 'vitest'
import { workerUrl } from '../../scripts/demo'
import { type NodeHost, nodeHost } from '../ecosystem/node-host'

/**
 * The port is one setting, `GUARD_PORT`: `npm start` and `npm run sim` listen on it (their scripts
 * expanded by the shell npm runs them with), `npm run demo:worker` and the README's lines talk to it. The examples state their
 * own ports, so that a second dev server fails rather than moving next door without a word.
 */
const host: NodeHost = await nodeHost()
const pkg = JSON.parse(host.read(host.join(host.cwd, 'package.json'))) as {
  scripts: Record<string, string>
}
const readme = host.read(host.join(host.cwd, 'README.md'))

/** A script's command line as `sh` expands it (what npm runs), with `env` on top of a clean one. */
async function expanded(script: string, env: Record<string, string>): Promise<string> {
  const { PATH } = host.env
  return await host.run('/bin/sh', ['-c', `printf '%s ' ${script}`], {
    cwd: host.cwd,
    env: { PATH: PATH ?? '', ...env },
  })
}

describe('GUARD_PORT', () => {
  for (const name of ['start', 'start:unsafe-pool', 'sim']) {
    it(`should be the port npm run ${name} listens on, 8787 unset`, async () => {
      expect(await expanded(pkg.scripts[name]!, { GUARD_PORT: '9123' })).toContain('--port 9123 ')
      expect(await expanded(pkg.scripts[name]!, {})).toContain('--port 8787 ')
    })
  }

  it('should be where demo:worker looks, unless GUARD_URL or --worker names another address', () => {
    expect(workerUrl([], {})).toBe('http://localhost:8787')
    expect(workerUrl([], { GUARD_PORT: '9123' })).toBe('http://localhost:9123')
    expect(workerUrl([], { GUARD_PORT: '9123', GUARD_URL: 'http://h:1' })).toBe('http://h:1')
    expect(workerUrl(['--worker', 'http://w:2'], { GUARD_PORT: '9123' })).toBe('http://w:2')
  })

  it("should be what the README's lines use: GUARD_URL from GUARD_PORT, every curl on GUARD_URL", () => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the shell's expansion, as the README writes it
    expect(readme).toContain('GUARD_URL=http://localhost:${GUARD_PORT:-8787}\n')
    const start = readme.indexOf('**Against the running Worker:**')
    const block = readme.slice(start, readme.indexOf('```\n', readme.indexOf('```sh', start) + 5))
    const curls = block.split('\n').filter((l) => l.startsWith('curl '))
    expect(curls.length).toBeGreaterThanOrEqual(2)
    for (const curl of curls) expect(curl).toMatch(/ "?\$GUARD_URL\//)
    expect(readme).toMatch(/`GUARD_PORT` \(default 8787\)/)
    // No line of the README names a variable demo:worker would ignore.
    expect(readme).not.toMatch(/\bGUARD=/)
  })
})

describe('the simulator alone, npm run sim', () => {
  it('should be sent to its own port wherever the docs name it: GUARD_PORT, 8787 unset', async () => {
    const files = (
      await host.run('/bin/sh', ['-c', 'ls README.md sim/README.md docs/*.md'], {
        cwd: host.cwd,
      })
    )
      .split('\n')
      .filter(Boolean)
    expect(files.length).toBeGreaterThan(10)
    const wrong: string[] = []
    let named = 0
    for (const file of files) {
      for (const line of host.read(host.join(host.cwd, file)).split('\n')) {
        if (!line.includes('npm run sim')) continue
        named++
        for (const [, port] of line.matchAll(/localhost:(\d+)/g)) {
          if (port !== '8787') wrong.push(`${file}: ${line.trim()}`)
        }
      }
    }
    expect(named).toBeGreaterThanOrEqual(3)
    expect(wrong).toEqual([])
  })
})

describe('the examples state their dev ports', () => {
  for (const [config, port] of [
    ['examples/consumer/wrangler.dev.toml', 8788],
    ['examples/hono-app/wrangler.dev.toml', 8789],
  ] as const) {
    it(`should give ${config} its own port, ${port}, as its curls use`, () => {
      expect(host.read(host.join(host.cwd, config))).toMatch(
        new RegExp(`\\[dev\\]\\nport = ${port}\\n`),
      )
    })
  }

  it("should send the README's consumer curl to the consumer's port", () => {
    const dev = readme.slice(readme.indexOf('<!-- consumer:dev -->'))
    const block = dev.slice(0, dev.indexOf('```\n', dev.indexOf('```sh') + 5))
    expect(block).toContain('curl -s localhost:8788/ask')
    expect(block).not.toContain('8787')
  })
})
