#!/usr/bin/env node
/**
 * @module The `workers-ai-guard` bin (`workers-ai-guard --help` lists its commands): `workers-ai-guard init` (writes a starter Worker; Node 20 too),
 * `workers-ai-guard probe [options]`, `workers-ai-guard directive [options]` and
 * `workers-ai-guard audit <files…> [options]` (Node 22). A thin
 * adapter that hands argv, the environment, the standard streams and (for audit) the file system to
 * the command and exits with its code.
 *
 * @example
 * // npx workers-ai-guard init          # in a Worker project, after `npm i workers-ai-guard hono`
 * // npx workers-ai-guard probe --url http://localhost:8787/v1 --key dev-key-tenant-a --json
 * // npx workers-ai-guard directive --url http://localhost:8788/v1 --json
 * // npx workers-ai-guard audit gateway-logs/*.jsonl.gz app-log.jsonl --csv > suspicious.csv
 */
import { auditCommand } from './audit/audit-command'
import { nodeLogSource } from './audit/node-files'
import { CLI_HELP, type CliRoute, cliRoute } from './cli-help'
import { directiveCommand } from './directive/directive-command'
import { initCommand } from './init/init-command'
import { type CommandIo, probeCommand } from './probe/command'

// `process` is untyped here (the project has no @types/node): give its parts their types once.
interface WritableTty {
  write(text: string): boolean
  isTTY?: boolean
  columns?: number
}
interface NodeProcess {
  argv: string[]
  env: Record<string, string | undefined>
  stdout: WritableTty
  stderr: WritableTty
  exitCode?: number
  cwd(): string
}

const proc: NodeProcess = process

const io: CommandIo = {
  env: proc.env,
  stdout: (text) => {
    proc.stdout.write(text)
  },
  stderr: (text) => {
    proc.stderr.write(text)
  },
  isTTY: proc.stderr.isTTY === true,
  ...(proc.stderr.columns ? { columns: proc.stderr.columns } : {}),
}

const argv = proc.argv.slice(2)
// exitCode, not exit(): stdout may still be flushing a large JSON report into a pipe.
// The starter `init` copies ships in the package beside dist/ (and sits beside src/ in the repository).
const starter = new URL('../../examples/consumer/', (import.meta as unknown as { url: string }).url)
proc.exitCode = await run(cliRoute(argv))

async function run(route: CliRoute): Promise<number> {
  if (route.kind === 'help') {
    ;(route.asked ? io.stdout : io.stderr)(CLI_HELP)
    return route.asked ? 0 : 2
  }
  if (route.kind === 'unknown') {
    io.stderr(`workers-ai-guard: unknown command ${JSON.stringify(route.given)}\n\n${CLI_HELP}`)
    return 2
  }
  const { name, args } = route
  if (name === 'audit') return await auditCommand(args, { ...io, open: nodeLogSource })
  if (name === 'init') return await initCommand(args, { ...io, cwd: proc.cwd() }, starter)
  if (name === 'directive') return await directiveCommand(args, io)
  return await probeCommand(['probe', ...args], io)
}
