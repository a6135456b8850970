import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type NodeHost, nodeHost } from '../ecosystem/node-host'
import { STARTER_FILES } from '../support/starter'

/**
 * The package as npm would publish it: `npm pack` builds dist/ (prepack), the tarball holds the library,
 * the Worker, the CLI and their declarations — and nothing of the tests, the simulator or the bench —
 * and it works when installed into an empty project: imported from Node, type-checked under the
 * strictest resolution (nodenext), its bin runnable.
 */
interface PackedFile {
  path: string
}

let host: NodeHost
let files: string[] = []
let dir = ''

const npm = (args: string[], cwd: string) =>
  host.run('npm', args, { cwd, env: { ...host.env, npm_config_update_notifier: 'false' } })

beforeAll(async () => {
  host = await nodeHost()
  // --dry-run still runs prepack, so this also proves `npm run build` from a clean dist/.
  const listing = JSON.parse(await npm(['pack', '--dry-run', '--json', '--silent'], host.cwd)) as {
    files: PackedFile[]
  }[]
  files = listing[0]!.files.map((f) => f.path).sort()
  dir = host.tempDir('guard-pack-')
  const packed = JSON.parse(
    await npm(
      ['pack', '--ignore-scripts', '--json', '--silent', '--pack-destination', dir],
      host.cwd,
    ),
  ) as { filename: string }[]
  const modules = host.join(dir, 'node_modules')
  await host.run('mkdir', ['-p', host.join(modules, 'workers-ai-guard')], { cwd: dir })
  await host.run(
    'tar',
    [
      '-xzf',
      host.join(dir, packed[0]!.filename),
      '--strip-components=1',
      '-C',
      host.join(modules, 'workers-ai-guard'),
    ],
    { cwd: dir },
  )
  // The installed dependencies, as npm would resolve them (no registry here).
  for (const dep of ['hono', 'gpt-tokenizer', '@cloudflare']) {
    host.link(host.join(host.cwd, 'node_modules', dep), host.join(modules, dep))
  }
  host.write(
    host.join(dir, 'package.json'),
    '{ "name": "consumer", "private": true, "type": "module" }',
  )
}, 90_000)

afterAll(() => {
  if (dir) host.remove(dir)
})

describe('npm pack', () => {
  it('should ship the library, the Worker, the CLI, their types, migrations and docs', () => {
    for (const path of [
      'package.json',
      'README.md',
      'CHANGELOG.md',
      'LICENSE',
      'wrangler.toml',
      'migrations/0001_incidents.sql',
      'dist/index.js',
      'dist/index.d.ts',
      'dist/lean.js',
      'dist/lean.d.ts',
      'dist/adapters.js',
      'dist/adapters.d.ts',
      'dist/worker/index.js',
      'dist/worker/index.d.ts',
      'dist/tools/cli.js',
    ]) {
      expect(files).toContain(path)
    }
  })

  it('should ship nothing of the tests, the bench or the sources; the starter and simulator apart', () => {
    const allowed =
      /^(dist\/|migrations\/|package\.json$|README\.md$|CHANGELOG\.md$|LICENSE$|wrangler\.toml$)/
    const starter = STARTER_FILES.map((f) => `examples/consumer/${f}`)
    expect(files.filter((f) => !allowed.test(f) && !starter.includes(f))).toEqual([])
    expect(starter.filter((f) => !files.includes(f))).toEqual([])
    expect(
      files.filter((f) => /\.test\.|(^|\/)(test|sim|bench)\//.test(f.replace(/^dist\/sim\//, ''))),
    ).toEqual([])
    // The simulator ships as one built Worker for `npm run dev` (dist/sim), never inside the guard's code.
    expect(files.filter((f) => f.startsWith('dist/sim/')).sort()).toEqual([
      'dist/sim/worker.js',
      'dist/sim/wrangler.toml',
    ])
    const code = files
      .filter((f) => f.endsWith('.js') && !f.startsWith('dist/sim/'))
      .map((f) => host.read(host.join(dir, 'node_modules/workers-ai-guard', f)))
      .join('\n')
    expect(code).not.toMatch(/SimEngine|KvPool|pd-abort-leak/)
    expect(code).toContain('guardAi')
  })
})

describe('the packed package installed in an empty project', () => {
  it('should import in Node 22 and guard: a refusal by the ceiling, a release with echo off', async () => {
    const script = `
      import { guardAi, GuardError, CANARY_PATTERN } from 'workers-ai-guard'
      import { openAiHttpUpstream, asAiBinding } from 'workers-ai-guard/adapters'
      import { createGuard as leanGuard } from 'workers-ai-guard/lean'
      const profile = { contextWindow: 2048, kvPoolTokens: 1024, maxPrefillTokensPerSecond: 1e6,
        tokenizerDrift: 0.1, defaultOutputReserve: 64, echo: 'off' }
      let calls = 0
      const upstream = { run: async () => { calls++; return { choices: [{ index: 0,
        message: { role: 'assistant', content: 'own answer' }, finish_reason: 'stop' }] } } }
      const ai = guardAi(upstream, { secret: 'x'.repeat(40), tenant: 't', models: { m: profile } })
      let code
      try { await ai.run('m', { messages: [{ role: 'user', content: 'word '.repeat(5000) }] }) }
      catch (e) { code = e instanceof GuardError ? e.code : String(e) }
      const out = await ai.run('m', { messages: [{ role: 'user', content: 'hi' }] })
      let lean
      try { leanGuard({ secret: 'x'.repeat(40), secrets: { high: 'substitute' } }) }
      catch (e) { lean = e.message.includes("'workers-ai-guard'") }
      console.log(JSON.stringify({ code, calls, content: out.choices[0].message.content, lean,
        pattern: CANARY_PATTERN instanceof RegExp, http: typeof openAiHttpUpstream,
        binding: typeof asAiBinding }))
    `
    const out = await host.run(
      host.join(host.cwd, 'node_modules/.bin/node'),
      ['--input-type=module', '-e', script],
      {
        cwd: dir,
      },
    )
    expect(JSON.parse(out.trim().split('\n').pop()!)).toEqual({
      code: 'context_length_exceeded',
      calls: 1,
      content: 'own answer',
      lean: true,
      pattern: true,
      http: 'function',
      binding: 'function',
    })
  }, 30_000)

  it('should type-check a consumer under nodenext resolution, and reject a wrong use', async () => {
    const consumer = `
      import { guardAi, type AiRunner, type GuardErrorCode, type ModelProfile } from 'workers-ai-guard'
      import { openAiHttpUpstream, type OpenAiHttpOptions } from 'workers-ai-guard/adapters'
      const options: OpenAiHttpOptions = { baseUrl: 'http://localhost:30000/v1' }
      const upstream: AiRunner = openAiHttpUpstream(options)
      const profile: Partial<ModelProfile> = { kvPoolTokens: 681_280 }
      export const ai: AiRunner = guardAi(upstream, { secret: 's'.repeat(40), models: { m: profile } })
      export const code: GuardErrorCode = 'response_quarantined'
    `
    host.write(host.join(dir, 'consumer.ts'), consumer)
    host.write(
      host.join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2023',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: ['@cloudflare/workers-types'],
        },
        files: ['consumer.ts'],
      }),
    )
    const tsc = host.join(host.cwd, 'node_modules/.bin/tsc')
    await host.run(tsc, ['-p', '.'], { cwd: dir })
    // Must fire: the same check rejects a code the package does not define.
    host.write(
      host.join(dir, 'consumer.ts'),
      consumer.replace("'response_quarantined'", "'no_such_code'"),
    )
    await expect(host.run(tsc, ['-p', '.'], { cwd: dir })).rejects.toThrow(/no_such_code/)
  }, 30_000)

  it('should run its bin', async () => {
    const cli = host.join(dir, 'node_modules/workers-ai-guard/dist/tools/cli.js')
    expect(host.read(cli).startsWith('#!/usr/bin/env node')).toBe(true)
    const help = await host.run(host.join(host.cwd, 'node_modules/.bin/node'), [cli, '--help'], {
      cwd: dir,
    })
    // Every command, one line each, under --help and help alike.
    for (const name of ['init', 'probe', 'directive', 'audit'])
      expect(help).toMatch(new RegExp(`\\n  ${name} +\\S`))
    const word = await host.run(host.join(host.cwd, 'node_modules/.bin/node'), [cli, 'help'], {
      cwd: dir,
    })
    expect(word).toBe(help)
  }, 30_000)
})

describe('wrangler types', () => {
  it('should keep the committed worker-configuration.d.ts in step with `npm run types`', async () => {
    // The same command as the `types` script (whichever config it reads), in --check mode.
    const pkg = JSON.parse(host.read(host.join(host.cwd, 'package.json'))) as {
      scripts: Record<string, string>
    }
    const [command, ...args] = pkg.scripts.types!.split(/\s+/)
    expect(command).toBe('wrangler')
    const wrangler = host.join(host.cwd, 'node_modules/.bin/wrangler')
    const out = await host.run(wrangler, [...args, '--check'], {
      cwd: host.cwd,
      env: { ...host.env, WRANGLER_SEND_METRICS: 'false', CI: '1' },
    })
    expect(out).toContain('up to date')
    // One config, so one AI binding: the real Workers AI (wrangler.toml) or the simulator's RPC
    // entrypoint (wrangler.dev.toml) — no union left from an [env.dev].
    expect(host.read(host.join(host.cwd, 'worker-configuration.d.ts'))).toMatch(
      /\tAI: (Ai|Service \/\* entrypoint SimulatedAi from workers-ai-sim \*\/);/,
    )
  }, 30_000)
})
