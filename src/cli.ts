#!/usr/bin/env node
/**
 * @module The `workers-ai-guard` bin (Node 22): `workers-ai-guard probe [options]`. A thin adapter
 * that hands argv, the environment and the standard streams to `probeCommand` and exits with its code.
 *
 * @example
 * // npx workers-ai-guard probe --url http://localhost:8787/v1 --key dev-key-tenant-a --json
 */
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

// exitCode, not exit(): stdout may still be flushing a large JSON report into a pipe.
proc.exitCode = await probeCommand(proc.argv.slice(2), io)
