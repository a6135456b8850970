/**
 * @module `workers-ai-guard init [--dir <path>] [--force]`: writes the consumer starter (see
 * `./starter`) into a Worker project, with node:fs (through `process.getBuiltinModule`, since the
 * project has no @types/node), and says what to run next. Runs on Node 20 too: it is the first
 * command a consumer may meet before installing Node 22.
 */
import { parseCommandLine } from '../cli-args'
import { INSTALLED_SIM_CONFIG, type StarterFiles, writeStarter } from './starter'

/** The output side of a command. */
interface InitIo {
  stdout(text: string): void
  stderr(text: string): void
  /** The working directory (a path). */
  cwd: string
}

interface NodeFs {
  promises: {
    readFile(path: string, encoding: 'utf8'): Promise<string>
    writeFile(path: string, text: string): Promise<void>
    mkdir(path: string, options: { recursive: true }): Promise<unknown>
  }
}
interface NodePath {
  resolve(...paths: string[]): string
  dirname(path: string): string
  basename(path: string): string
}
interface NodeUrl {
  fileURLToPath(url: URL): string
}
interface NodeModules {
  getBuiltinModule(name: 'node:fs'): NodeFs
  getBuiltinModule(name: 'node:path'): NodePath
  getBuiltinModule(name: 'node:url'): NodeUrl
}

const INIT_USAGE = `Usage: workers-ai-guard init [--dir <path>] [--force]

Writes a guarded Worker into a project (default: the current folder): wrangler.toml (production),
wrangler.dev.toml (the leaking simulator as env.AI, development secrets), tsconfig.json,
src/index.ts (guard.wrap, guardAi and aiGuard), src/auth.ts (a sign-in to replace), .gitignore,
and the npm scripts dev, types, check and deploy. Refuses to replace a starter file without --force;
a script name already in use keeps its command.
`

/**
 * Runs `init` with `args` (after the word `init`); resolves with the exit code. `templates` is the
 * folder URL of the starter (the package's `examples/consumer/`).
 *
 * @example
 * process.exitCode = await initCommand(['--dir', 'my-worker'], io, new URL('../../examples/consumer/', import.meta.url))
 */
export async function initCommand(
  args: readonly string[],
  io: InitIo,
  templates: URL,
): Promise<number> {
  const parsed = parseInitArgs(args)
  if ('error' in parsed) {
    io.stderr(`workers-ai-guard init: ${parsed.error}\n\n${INIT_USAGE}`)
    return 2
  }
  if (parsed.help) {
    io.stdout(INIT_USAGE)
    return 0
  }
  const node = process as unknown as NodeModules
  const fs = node.getBuiltinModule('node:fs').promises
  const path = node.getBuiltinModule('node:path')
  const root = path.resolve(io.cwd, parsed.dir)
  const templateRoot = node.getBuiltinModule('node:url').fileURLToPath(templates)
  const files: StarterFiles = {
    template: (file) => fs.readFile(path.resolve(templateRoot, file), 'utf8'),
    read: (file) => fs.readFile(path.resolve(root, file), 'utf8').catch(missingAsUndefined),
    write: async (file, text) => {
      const target = path.resolve(root, file)
      await fs.mkdir(path.dirname(target), { recursive: true })
      await fs.writeFile(target, text)
    },
  }
  try {
    const result = await writeStarter(files, { force: parsed.force, name: path.basename(root) })
    if (!result.ok) {
      io.stderr(
        `workers-ai-guard init: ${root} already has ${result.existing.join(', ')}; nothing was written. Run with --force to replace the starter's files.\n`,
      )
      return 1
    }
    io.stdout(nextSteps(root, result))
    return 0
  } catch (error) {
    io.stderr(`workers-ai-guard init: ${(error as Error).message}\n`)
    return 1
  }
}

function missingAsUndefined(error: { code?: string }): undefined {
  if (error.code === 'ENOENT') return undefined
  throw error
}

function parseInitArgs(
  args: readonly string[],
): { dir: string; force: boolean; help: boolean } | { error: string } {
  const parsed = { dir: '.', force: false, help: false }
  try {
    const line = parseCommandLine(args, { dir: 'string', force: 'boolean', help: 'boolean' }, false)
    for (const { name, value } of line.options) {
      if (name === 'dir') parsed.dir = value ?? ''
      else if (name === 'force') parsed.force = true
      else parsed.help = true
    }
  } catch (error) {
    return { error: (error as Error).message }
  }
  return parsed.dir === '' ? { error: '--dir needs a path' } : parsed
}

function nextSteps(
  root: string,
  result: { wrote: string[]; scripts: string[]; keptScripts: string[] },
): string {
  const kept =
    result.keptScripts.length > 0
      ? `Kept your own scripts ${result.keptScripts.join(', ')} (the starter's would have been: see the README).\n`
      : ''
  return `Wrote ${result.wrote.join(', ')} in ${root}.
Added the npm scripts ${result.scripts.join(', ') || '(none)'}.
${kept}
Next:
  npm run types    # Env for src/index.ts from wrangler.toml (AI and the secrets it declares)
  npm run check    # tsc
  npm run dev      # your Worker on http://localhost:8788, env.AI the leaking simulator
                   # (${INSTALLED_SIM_CONFIG})
  curl -s localhost:8788/ask -H 'authorization: Bearer dev-key-alice' -d '{"question":"Summarise our Q3 plan."}'

Before deploying: replace src/auth.ts with your own sign-in, then
  npx wrangler secret put GUARD_SECRET   # at least 32 random bytes
  npx wrangler secret put USER_KEYS
  npm run deploy
`
}
