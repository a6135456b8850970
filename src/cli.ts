#!/usr/bin/env node
/**
 * @module The `workers-ai-guard` bin: `workers-ai-guard init` (writes a starter Worker; Node 20 too),
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
const starter = new URL('../examples/consumer/', (import.meta as unknown as { url: string }).url)
proc.exitCode =
  argv[0] === 'audit'
    ? await auditCommand(argv.slice(1), { ...io, open: nodeLogSource })
    : argv[0] === 'init'
      ? await initCommand(argv.slice(1), { ...io, cwd: proc.cwd() }, starter)
      : argv[0] === 'directive'
        ? await directiveCommand(argv.slice(1), io)
        : await probeCommand(argv, io)
