/**
 * @module Runs `workers-ai-guard audit` in-process for tests: the command with Node's files and its
 * standard streams captured.
 */
import { auditCommand, nodeLogSource } from '../../src/audit'

/** What one run of the command gave. */
export interface AuditRun {
  code: number
  stdout: string
  stderr: string
}

/**
 * Runs the command with `args` (after the word `audit`).
 *
 * @example
 * const { code, stdout } = await runAuditCommand('logs/app.jsonl', '--json')
 */
export async function runAuditCommand(...args: string[]): Promise<AuditRun> {
  const out = { stdout: '', stderr: '' }
  const code = await auditCommand(args, {
    stdout: (text) => {
      out.stdout += text
    },
    stderr: (text) => {
      out.stderr += text
    },
    isTTY: false,
    open: nodeLogSource,
  })
  return { code, ...out }
}
