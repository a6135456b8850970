import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { CLI_HELP, cliRoute } from '../../src/tools/cli-help'

// Every command the bin dispatches: src/tools/cli.ts runs these four, and the list must name each.
const DISPATCHED = ['init', 'probe', 'directive', 'audit']

describe('the bin lists its commands', () => {
  it('should list every command with one line each', () => {
    const lines = CLI_HELP.split('\n')
    const listed = lines
      .filter((l) => /^ {2}[a-z]+ {2,}\S/.test(l))
      .map((l) => l.trim().split(' ')[0])
    expect(listed.sort()).toEqual([...DISPATCHED].sort())
    for (const name of DISPATCHED) {
      const line = lines.filter((l) => l.startsWith(`  ${name} `))
      expect(line, name).toHaveLength(1)
      expect(line[0]!.slice(13).length, name).toBeGreaterThan(20)
    }
  })

  // docs/api.md's bin section once left a command out: it lists exactly the commands the help lists.
  it("should have docs/api.md's bin table name every command the help lists, and only those", async () => {
    const listed = CLI_HELP.split('\n')
      .filter((l) => /^ {2}[a-z]+ {2,}\S/.test(l))
      .map((l) => l.trim().split(' ')[0])
    const api = await readFile('docs/api.md', 'utf8')
    const section = api.split('## `workers-ai-guard` (bin)\n')[1]?.split('\n## ')[0] ?? ''
    const rows = section
      .split('\n')
      .map((l) => /^\| `([a-z]+)` \|/.exec(l)?.[1])
      .filter((name) => name !== undefined)
    expect(rows.sort()).toEqual(listed.sort())
  })

  it('should list them for no command, help, --help and -h, and for nothing else', () => {
    expect(cliRoute([])).toEqual({ kind: 'help', asked: false })
    for (const word of ['help', '--help', '-h']) {
      expect(cliRoute([word])).toEqual({ kind: 'help', asked: true })
    }
    // Must not fire: a command's own --help is the command's.
    expect(cliRoute(['audit', '--help'])).toEqual({
      kind: 'command',
      name: 'audit',
      args: ['--help'],
    })
    expect(cliRoute(['directive', '--url', 'x'])).toMatchObject({
      kind: 'command',
      name: 'directive',
    })
    // Options first are probe's (its form before commands had names).
    expect(cliRoute(['--url', 'http://e/v1'])).toEqual({
      kind: 'command',
      name: 'probe',
      args: ['--url', 'http://e/v1'],
    })
    expect(cliRoute(['probes'])).toEqual({ kind: 'unknown', given: 'probes' })
    for (const name of DISPATCHED) expect(cliRoute([name])).toMatchObject({ kind: 'command', name })
    // A name inherited from Object.prototype is no command.
    expect(cliRoute(['constructor'])).toEqual({ kind: 'unknown', given: 'constructor' })
  })
})
