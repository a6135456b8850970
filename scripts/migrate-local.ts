/**
 * @module `npm start`'s prestart: the local D1 migrations, applied by wrangler, reported in one line.
 * Wrangler prints its whole migration table after each migration it applies (four tables on a fresh
 * clone); this runs the same command and prints the table once, only when it fails.
 */

/** The Node APIs used here (the project has no @types/node: its runtime code is Web-only). */
interface Child {
  stdout: { on(event: 'data', listener: (chunk: Uint8Array) => void): void }
  stderr: { on(event: 'data', listener: (chunk: Uint8Array) => void): void }
  on(event: 'error', listener: (error: Error) => void): void
  on(event: 'close', listener: (code: number | null) => void): void
}
interface ChildProcessModule {
  spawn(
    command: string,
    args: string[],
    options: { stdio: ['ignore', 'pipe', 'pipe']; shell: boolean },
  ): Child
}
interface Process {
  argv: string[]
  exitCode: number | undefined
  platform: string
  stdout: { write(text: string): void }
  stderr: { write(text: string): void }
}

const proc = (globalThis as unknown as { process: Process }).process

/**
 * The one line a successful run prints, from wrangler's output: what it applied, or that nothing was
 * pending. Undefined when the output is not one wrangler's success looks like (then it prints whole).
 *
 * @example
 * summarize('✅ No migrations to apply!') // 'Local D1 (QUARANTINE_DB): no migrations to apply.'
 */
export function summarize(output: string, database = 'QUARANTINE_DB'): string | undefined {
  if (/No migrations to apply/.test(output)) {
    return `Local D1 (${database}): no migrations to apply.`
  }
  // The last table is the final state: every migration it lists with ✅ is applied.
  const tables = output.split(/┌[─┬]+┐/)
  const last = tables.at(-1) ?? ''
  const applied = [...last.matchAll(/│\s*(\S+\.sql)\s*│\s*✅/g)].map((m) => m[1]!)
  const pending = [...last.matchAll(/│\s*(\S+\.sql)\s*│\s*(?!✅)\S/g)].map((m) => m[1]!)
  if (applied.length === 0 || pending.length > 0) return undefined
  const count = applied.length === 1 ? '1 migration' : `${applied.length} migrations`
  return `Local D1 (${database}): ${count} applied (${applied.join(', ')}).`
}

async function main(): Promise<void> {
  const cp = (await import('node:child_process' as string)) as ChildProcessModule
  const extra = proc.argv.slice(2)
  const args = ['d1', 'migrations', 'apply', 'QUARANTINE_DB', '--local', '-c', 'wrangler.dev.toml']
  // Through the shell on Windows, where npm's bin links are .cmd files.
  const child = cp.spawn('wrangler', [...args, ...extra], {
    stdio: ['ignore', 'pipe', 'pipe'],
    shell: proc.platform === 'win32',
  })
  const decoder = new TextDecoder()
  let output = ''
  child.stdout.on('data', (chunk) => {
    output += decoder.decode(chunk, { stream: true })
  })
  child.stderr.on('data', (chunk) => {
    output += decoder.decode(chunk, { stream: true })
  })
  const code = await new Promise<number | null>((done, fail) => {
    child.on('error', fail)
    child.on('close', done)
  })
  const line = code === 0 ? summarize(output) : undefined
  if (line === undefined) {
    proc.stderr.write(output)
    proc.exitCode = code === 0 ? 0 : (code ?? 1)
    return
  }
  proc.stdout.write(`${line}\n`)
}

const invoked = proc.argv[1] ?? ''
if (/migrate-local\.ts$/.test(invoked)) await main()
