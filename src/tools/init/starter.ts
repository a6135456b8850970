/**
 * @module What `workers-ai-guard init` writes into a consumer's project: the starter of
 * `examples/consumer` (the Worker the README's snippets are cut from, and that CI runs), a
 * `.gitignore`, and the npm scripts that run it. Pure: the command reads and writes through
 * {@link StarterFiles}.
 */

/** The starter's files, as paths relative to `examples/consumer/` and to the project. */
const STARTER_FILES = [
  'wrangler.toml',
  'wrangler.dev.toml',
  'tsconfig.json',
  'src/index.ts',
  'src/auth.ts',
] as const

/** Where the simulator's Worker config sits in an installed package (built by `npm run build`). */
export const INSTALLED_SIM_CONFIG = 'node_modules/workers-ai-guard/dist/sim/wrangler.toml'

/**
 * The scripts the starter adds to the project's package.json, where that name is still free: a
 * user's own `dev` or `deploy` is never replaced.
 */
const STARTER_SCRIPTS: Readonly<Record<string, string>> = {
  dev: `wrangler dev -c wrangler.dev.toml -c ${INSTALLED_SIM_CONFIG}`,
  types: 'wrangler types --include-runtime=false',
  check: 'tsc --noEmit -p .',
  deploy: 'wrangler deploy',
}

/** What wrangler and npm leave in the project that does not belong in version control. */
const GITIGNORE = 'node_modules/\n.wrangler/\n.dev.vars*\n'

/** The file operations the starter needs; paths are relative to the project. */
export interface StarterFiles {
  /** The text of a starter file (relative to `examples/consumer/`). */
  template(path: string): Promise<string>
  /** The project's file at `path`, or undefined when there is none. */
  read(path: string): Promise<string | undefined>
  /** Writes `text` at `path`, creating its folders. */
  write(path: string, text: string): Promise<void>
}

/** What {@link writeStarter} did, or which files it refused to replace. */
type StarterResult =
  | { ok: true; wrote: string[]; scripts: string[]; keptScripts: string[] }
  | { ok: false; existing: string[] }

/**
 * Writes the starter into a project. Without `force`, refuses (writing nothing) when any starter
 * file exists already; package.json is created when missing and otherwise only gains the scripts
 * whose names are free. Rejects when package.json is not a JSON object (it is never rewritten then).
 *
 * @example
 * const result = await writeStarter(files, { force: false })
 * if (!result.ok) console.error(`exists: ${result.existing.join(', ')}`)
 */
export async function writeStarter(
  files: StarterFiles,
  options: { force: boolean; name: string },
): Promise<StarterResult> {
  const existing: string[] = []
  for (const path of STARTER_FILES) {
    if ((await files.read(path)) !== undefined) existing.push(path)
  }
  if (existing.length > 0 && !options.force) return { ok: false, existing }
  const manifest = await packageWithScripts(await files.read('package.json'), options.name)
  const wrote: string[] = []
  for (const path of STARTER_FILES) {
    await files.write(path, await files.template(path))
    wrote.push(path)
  }
  if ((await files.read('.gitignore')) === undefined) {
    await files.write('.gitignore', GITIGNORE)
    wrote.push('.gitignore')
  }
  await files.write('package.json', manifest.text)
  return { ok: true, wrote, scripts: manifest.added, keptScripts: manifest.kept }
}

/** The package.json text with the starter's scripts added where their names are free. */
async function packageWithScripts(
  text: string | undefined,
  name: string,
): Promise<{ text: string; added: string[]; kept: string[] }> {
  const manifest: Record<string, unknown> =
    text === undefined ? { name, private: true, type: 'module' } : parseObject(text)
  const scripts = manifest.scripts ?? {}
  if (typeof scripts !== 'object' || scripts === null || Array.isArray(scripts)) {
    throw new Error(
      'package.json has a "scripts" field that is not an object; fix it and run init again',
    )
  }
  const merged: Record<string, unknown> = { ...scripts }
  const added: string[] = []
  const kept: string[] = []
  for (const [script, command] of Object.entries(STARTER_SCRIPTS)) {
    if (script in merged && merged[script] !== command) {
      kept.push(script)
      continue
    }
    merged[script] = command
    added.push(script)
  }
  manifest.scripts = merged
  return { text: `${JSON.stringify(manifest, null, 2)}\n`, added, kept }
}

function parseObject(text: string): Record<string, unknown> {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    throw new Error(
      `package.json is not valid JSON (${(error as Error).message}); fix it and run init again`,
    )
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error('package.json is not a JSON object; fix it and run init again')
  }
  return value as Record<string, unknown>
}
