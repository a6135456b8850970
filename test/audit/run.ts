/**
 * @module Runs `workers-ai-guard audit` in-process for tests: the command with Node's files and its
 * standard streams captured; and how a test compares a quote with a prompt.
 */
import { type AuditReport, auditCommand, nodeLogSource } from '../../src/tools/audit'

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

/**
 * Words of a text, lower-cased, joined by single spaces (how a quote is compared with a prompt).
 *
 * @example
 * words('Hello, World!') // 'hello world'
 */
export const words = (text: string): string =>
  text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim()

/**
 * The words of a logged request's prompt, its assistant turns left out (as the audit indexes it).
 *
 * @example
 * promptWords({ messages: [{ role: 'user', content: 'Hi there' }] }) // 'hi there'
 */
export const promptWords = (inputs: Record<string, unknown>): string =>
  words(
    (inputs.messages as { role: string; content: string }[])
      .filter((m) => m.role !== 'assistant')
      .map((m) => m.content)
      .join('\n'),
  )

/**
 * A run of the command with `--json`: its exit code and the parsed report.
 *
 * @example
 * const { code, report } = await auditJson('logs/app.jsonl')
 */
export async function auditJson(...args: string[]): Promise<{ code: number; report: AuditReport }> {
  const run = await runAuditCommand(...args, '--json')
  return { code: run.code, report: JSON.parse(run.stdout) as AuditReport }
}
