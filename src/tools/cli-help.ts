/**
 * @module The `workers-ai-guard` bin's own help: the list of its commands, one line each, and which
 * command a command line names (`npx workers-ai-guard`, `--help` and `help` list them).
 */

/** The bin's commands, in the order a user meets them. */
const COMMANDS = {
  init: 'write a guarded Worker starter into a project (wrangler configs, src/, npm scripts)',
  probe: 'measure the prompt length a deployment really serves (its real KV pool)',
  directive: 'measure how the model follows the echo directive; print the profile to deploy',
  audit: "find the KV-cache incident's signature in exported request logs",
} as const

type CommandName = keyof typeof COMMANDS

/** What `workers-ai-guard`, `--help` and `help` print. */
export const CLI_HELP = `Usage: workers-ai-guard <command> [options]

Commands
${Object.entries(COMMANDS)
  .map(([name, line]) => `  ${name.padEnd(11)}${line}`)
  .join('\n')}

Run "workers-ai-guard <command> --help" for a command's options.
`

/** What a command line asks for: a command with its arguments, the list, or a word that is none. */
export type CliRoute =
  | { kind: 'command'; name: CommandName; args: string[] }
  | { kind: 'help'; asked: boolean }
  | { kind: 'unknown'; given: string }

/**
 * Which command `argv` (after the bin's name) runs. Nothing, `help`, `--help` or `-h` lists the
 * commands (`asked` false for nothing: exit 2); an option first is `probe`'s, as before it had a name.
 *
 * @example
 * cliRoute(['audit', 'app-log.jsonl']) // { kind: 'command', name: 'audit', args: ['app-log.jsonl'] }
 */
export function cliRoute(argv: readonly string[]): CliRoute {
  const [first, ...rest] = argv
  if (first === undefined) return { kind: 'help', asked: false }
  if (first === 'help' || first === '--help' || first === '-h') return { kind: 'help', asked: true }
  if (Object.hasOwn(COMMANDS, first))
    return { kind: 'command', name: first as CommandName, args: rest }
  if (first.startsWith('-')) return { kind: 'command', name: 'probe', args: [...argv] }
  return { kind: 'unknown', given: first }
}
