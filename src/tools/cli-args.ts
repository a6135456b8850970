/**
 * @module The CLIs' argument parsing: Node's own `util.parseArgs` (strict, `--` ends the options),
 * reached through `process.getBuiltinModule` because the project has no @types/node. Each command
 * turns the ordered option tokens into its settings and reports a mistake with Node's message.
 */

/** An option a command takes: a value (`--url x`, `--url=x`) or a flag (`--json`). */
export type ArgKind = 'string' | 'boolean'

/** One option as given, in command-line order (a repeated option appears once per use). */
type OptionToken = { name: string; value: string } | { name: string; value: undefined }

/** Thrown for a command-line mistake: the command prints it with its usage and exits 2. */
export class UsageError extends Error {}

interface NodeToken {
  kind: 'option' | 'positional' | 'option-terminator'
  name?: string
  value?: string
}
interface NodeUtil {
  parseArgs(config: {
    args: string[]
    options: Record<string, { type: ArgKind; short?: string }>
    allowPositionals: boolean
    strict: true
    tokens: true
  }): { positionals: string[]; tokens: NodeToken[] }
}

/**
 * Parses `args` against `options` (name → kind). Resolves the option tokens in order and the
 * positional arguments; throws a {@link UsageError} with Node's message for an unknown option, a
 * missing or ambiguous value, a value on a flag, or a positional where none is allowed.
 *
 * @example
 * const { options, positionals } = parseCommandLine(['a.jsonl', '--json'], { json: 'boolean' }, true)
 */
export function parseCommandLine(
  args: readonly string[],
  options: Readonly<Record<string, ArgKind>>,
  allowPositionals: boolean,
): { options: OptionToken[]; positionals: string[] } {
  const util = (
    process as unknown as { getBuiltinModule(name: 'node:util'): NodeUtil }
  ).getBuiltinModule('node:util')
  let parsed: ReturnType<NodeUtil['parseArgs']>
  try {
    parsed = util.parseArgs({
      args: [...args],
      options: Object.fromEntries(Object.entries(options).map(([name, type]) => [name, { type }])),
      allowPositionals,
      strict: true,
      tokens: true,
    })
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
  const tokens: OptionToken[] = []
  for (const token of parsed.tokens) {
    if (token.kind === 'option') tokens.push({ name: token.name!, value: token.value })
  }
  return { options: tokens, positionals: parsed.positionals }
}
