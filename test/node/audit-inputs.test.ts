import { mkdir, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { beforeAll, describe, expect, it } from 'vitest'
import {
  type AuditReport,
  auditCommand,
  auditProgressLine,
  ContentIndex,
  linesOf,
  nodeLogSource,
  PROOF_UNITS,
  runAudit,
} from '../../src/tools/audit'
import { runAuditCommand } from '../audit/run'

// Bad inputs give a clear report, never a crash: malformed and truncated lines are counted with their
// line numbers and skipped; a file with nothing auditable, a missing file or bad arguments exit 2.
const dir = join(tmpdir(), `audit-inputs-${Date.now()}-${Math.floor(Math.random() * 1e6)}`)
const GLM = '@cf/zai-org/glm-5.3'

function app(id: string, tenant: string, user: string, answer: string, extra = {}): string {
  return JSON.stringify({
    id,
    started_at: '2026-09-01T10:00:00Z',
    duration_ms: 900,
    tenant,
    request: { model: GLM, messages: [{ role: 'user', content: user }] },
    response: {
      choices: [{ message: { role: 'assistant', content: answer } }],
      usage: { prompt_tokens: 40 },
    },
    ...extra,
  })
}

// 36 words: a quote is proof only from the span the guard guarantees (PROOF_UNITS, 30 units at
// k = 6); the 25 words this was before made a 25-unit passage, which real traffic shares by chance.
const SECRET =
  'The merger of Northwind and Contoso closes on the ninth of October at a price of forty one crowns per share pending the board vote, and the press release goes out at seven the next morning from Oslo'

const run = runAuditCommand

const path = (name: string): string => join(dir, name)

beforeAll(async () => {
  await mkdir(dir, { recursive: true })
  const good = app('a1', 'acme', `Summarise: ${SECRET}`, 'A merger is planned.')
  const leak = app('b1', 'globex', 'hello there', `From the context: ${SECRET}.`)
  await writeFile(
    path('truncated.jsonl'),
    [
      good,
      'garbage line',
      '',
      '{"id": "x", "request": {',
      JSON.stringify({ hello: 'world' }),
      leak,
      good.slice(0, 80),
    ].join('\n'),
  )
  await writeFile(path('junk.txt'), 'not a log\n\u0000\u0001 binary-ish \uFFFD\n{"half":\n')
  await writeFile(path('empty.jsonl'), '')
  await writeFile(
    path('bad-page.json'),
    '{\n  "result": [\n    {"id": "x", "created_at": "2026-09-01T10:00:00Z",',
  )
  await writeFile(
    path('clean.jsonl'),
    `${good}\n${app('c1', 'initech', 'what is two plus two', 'Four.')}\n`,
  )
})

describe('audit inputs', () => {
  it('should count malformed and truncated lines with their numbers and still audit the rest', async () => {
    const { code, stdout } = await run(path('truncated.jsonl'), '--json')
    expect(code).toBe(1)
    const report = JSON.parse(stdout) as AuditReport
    const file = report.files[0]!
    expect(file.records).toBe(2)
    expect(file.malformed.count).toBe(4)
    expect(file.malformed.first).toEqual([
      { line: 2, why: 'not JSON' },
      { line: 4, why: 'invalid or truncated JSON' },
      { line: 5, why: 'JSON of no known log format' },
      { line: 7, why: 'invalid or truncated JSON' },
    ])
    const leak = report.findings.find((f) => f.id === 'b1')!
    expect(leak.foreign[0]?.requests[0]?.id).toBe('a1')
    expect(leak.foreign[0]?.principal).toBe('acme')
    const text = await run(path('truncated.jsonl'))
    expect(text.stdout).toContain(
      '4 malformed line(s), skipped: 2 (not JSON), 4 (invalid or truncated JSON), 5 (JSON of no known log format), 7 (invalid or truncated JSON)',
    )
  })

  it('should read a gzipped log (as Logpush writes them) exactly as the plain one', async () => {
    const plain = `${app('a1', 'acme', `Summarise: ${SECRET}`, 'A merger is planned.')}\n${app('b1', 'globex', 'hello there', `From the context: ${SECRET}.`)}\n`
    await writeFile(path('leak.jsonl'), plain)
    await writeFile(path('leak.jsonl.gz'), gzipSync(plain))
    const fromGz = JSON.parse((await run(path('leak.jsonl.gz'), '--json')).stdout) as AuditReport
    const fromPlain = JSON.parse((await run(path('leak.jsonl'), '--json')).stdout) as AuditReport
    expect(fromGz.files[0]!.records).toBe(2)
    expect(fromGz.files[0]!.malformed.count).toBe(0)
    const leak = fromGz.findings.find((f) => f.id === 'b1')!
    expect(leak.foreign[0]?.requests[0]?.id).toBe('a1')
    // What the exact pass found is the same; fingerprint counts are not compared: each run draws its
    // own key (docs/audit.md), so two runs may winnow a passage into one fingerprint more or less.
    const stable = (report: AuditReport) =>
      report.findings.map((f) => ({
        id: f.id,
        checks: f.signals.map((signal) => [signal.check, signal.certain]),
        sources: f.foreign.map((x) => [x.principal, x.span, x.requests.map((r) => r.id)]),
      }))
    expect(stable(fromGz)).toEqual(stable(fromPlain))
  })

  it('should exit 2 with a clear report when no file holds a record', async () => {
    const junk = await run(path('junk.txt'), path('empty.jsonl'))
    expect(junk.code).toBe(2)
    expect(junk.stdout).toContain('no records')
    expect(junk.stderr).toContain('no record of a known format in any file: nothing was audited')
    const page = await run(path('bad-page.json'))
    expect(page.code).toBe(2)
    expect(page.stdout).toMatch(
      /1 malformed line\(s\), skipped: 1 \(not a valid JSON document .*truncated\?\)/,
    )
  })

  it('should exit 2 on a missing file or bad arguments, 0 on clean logs', async () => {
    const missing = await run(path('nope.jsonl'))
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain(`cannot open ${path('nope.jsonl')}`)
    expect((await run()).code).toBe(2)
    expect((await run(path('clean.jsonl'), '--bogus')).stderr).toContain("Unknown option '--bogus'")
    expect((await run(path('clean.jsonl'), '--json=yes')).stderr).toContain(
      "Option '--json' does not take an argument",
    )
    // After `--`, everything is a file, even a name that looks like an option.
    expect((await run('--', '--json')).stderr).toContain('cannot open --json')
    expect((await run(path('clean.jsonl'), '--json', '--csv')).code).toBe(2)
    expect((await run(path('clean.jsonl'), '--model-profile', 'x:kvPoolTokens=abc')).code).toBe(2)
    const clean = await run(path('clean.jsonl'))
    expect(clean.code).toBe(0)
    expect(clean.stdout).toContain('No request of 2 carries the incident')
    expect((await run('--help')).stdout).toContain('Usage: workers-ai-guard audit <file…>')
  })

  it('should judge only the period asked for, still reading the rest as sources', async () => {
    const after = await run(path('truncated.jsonl'), '--json', '--since', '2026-09-01T11:00:00Z')
    expect(after.code).toBe(0)
    const report = JSON.parse(after.stdout) as AuditReport
    expect(report.outsidePeriod).toBe(2)
    expect(report.findings).toEqual([])
    const during = await run(
      path('truncated.jsonl'),
      '--since',
      '2026-09-01',
      '--until',
      '2026-09-02',
    )
    expect(during.code).toBe(1)
    expect((await run(path('truncated.jsonl'), '--since', 'yesterday')).code).toBe(2)
  })

  it('should prove a leak only with a private passage of the guaranteed span', async () => {
    // Words of the UDHR's article 19, then article 20 — a passage of `units` of them is quoted.
    const words =
      'Everyone has the right to freedom of opinion and expression this right includes freedom to hold opinions without interference and to seek receive and impart information and ideas through any media and regardless of frontiers Everyone has the right to freedom of peaceful assembly and association No one may be compelled to belong to an association'.split(
        ' ',
      )
    const quoting = async (units: number, signOff = ''): Promise<number> => {
      const lines = [
        app('a1', 'acme', `Notes: ${words.join(' ')}${signOff}`, 'Noted.'),
        app('b1', 'globex', 'hello there', `Well: ${words.slice(3, 3 + units).join(' ')}!`),
      ]
      await writeFile(path('span.jsonl'), `${lines.join('\n')}\n`)
      return (await run(path('span.jsonl'))).code
    }
    expect(PROOF_UNITS).toBeGreaterThanOrEqual(30)
    // Fails on the 10-unit rule: a 29-word run of one other tenant's prompt is not proof alone.
    expect(await quoting(PROOF_UNITS - 1)).toBe(0)
    expect(await quoting(PROOF_UNITS)).toBe(1)
    // A model's stock sign-off that one other tenant pasted, written in three answers: never proof.
    const phrase = 'Please let me know if you have any questions or need any further assistance.'
    const lines = [app('a1', 'acme', `Draft reply: thanks for the order. ${phrase}`, 'Sent.')]
    for (const [id, tenant] of [
      ['b1', 'globex'],
      ['c1', 'initech'],
      ['d1', 'umbrella'],
    ]) {
      lines.push(
        app(
          id!,
          tenant!,
          'Is the parcel late?',
          `It left on Monday and arrives on Friday, with the invoice in the box and the tracking number sent to your inbox. ${phrase}`,
        ),
      )
    }
    await writeFile(path('stock.jsonl'), `${lines.join('\n')}\n`)
    expect((await run(path('stock.jsonl'))).code).toBe(0)
  })

  it('should judge with a profile given on the command line', async () => {
    // A 900-token pool: the clean log's first prompt (≈ 30 tokens) is fine, a padded one is not.
    const line = JSON.parse(app('p1', 'acme', 'word '.repeat(2000), 'ok', { duration_ms: 5000 }))
    line.response.usage.prompt_tokens = 2004
    await writeFile(path('small-pool.jsonl'), `${JSON.stringify(line)}\n`)
    const run1 = await run(
      path('small-pool.jsonl'),
      '--json',
      '--model-profile',
      `${GLM}:kvPoolTokens=900`,
    )
    expect(run1.code).toBe(1)
    const report = JSON.parse(run1.stdout) as AuditReport
    expect(report.findings[0]?.signals.map((s) => s.check)).toEqual(['over_pool'])
    expect(report.findings[0]?.signals[0]?.evidence).toContain(
      'the engine counted 2,004 prompt tokens and answered, but the real pool holds 900',
    )
    expect(report.models[0]?.pool).toBe(900)
    const json = await run(
      path('small-pool.jsonl'),
      '--model-profile',
      `{"${GLM}": {"kvPoolTokens": 100000}}`,
    )
    expect(json.code).toBe(0)
  })

  it('should flag the placeholder signature: a reported count far below the prompt', async () => {
    const lines = [
      JSON.stringify({
        id: 'gw-1',
        created_at: '2026-09-01T10:00:00Z',
        model: GLM,
        duration: 30_000,
        tokens_in: 1,
        tokens_out: 200,
        status_code: 200,
        cached: false,
        metadata: '{"tenant":"acme"}',
        request: {
          messages: [{ role: 'user', content: 'lorem ipsum dolor sit amet '.repeat(2000) }],
        },
        response: { result: { response: 'Short answer.', usage: { prompt_tokens: 1 } } },
      }),
      // A response-cache hit answers at once and reports nothing: never judged by timing or usage.
      JSON.stringify({
        id: 'gw-2',
        created_at: '2026-09-01T10:01:00Z',
        model: GLM,
        duration: 3,
        tokens_in: 0,
        tokens_out: 0,
        status_code: 200,
        cached: true,
        request: {
          messages: [{ role: 'user', content: 'lorem ipsum dolor sit amet '.repeat(40_000) }],
        },
        response: { result: { response: 'Cached answer.' } },
      }),
    ]
    const report = await runAudit([
      {
        name: 'gw.jsonl',
        lines: async function* () {
          yield* lines
        },
      },
    ])
    expect(report.findings.map((f) => f.id)).toEqual(['gw-1'])
    const signal = report.findings[0]!.signals.find((s) => s.check === 'usage_undercount')!
    expect(signal.certain).toBe(true)
    expect(signal.evidence).toContain(
      'the engine reported 1 prompt tokens for a prompt of at least',
    )
    expect(report.findings[0]!.tenant).toBe('acme')
    expect(report.coverage.prefill_speed.skipped['answer served from the response cache']).toBe(1)
  })

  it('should split lines across chunks, CRLF and UTF-8 boundaries', async () => {
    const bytes = new TextEncoder().encode('{"a":"é"}\r\n\n{"b":"中文"}\nlast')
    async function* chunks(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < bytes.length; i += 3) yield bytes.slice(i, i + 3)
    }
    const lines: string[] = []
    for await (const line of linesOf(chunks())) lines.push(line)
    expect(lines).toEqual(['{"a":"é"}', '', '{"b":"中文"}', 'last'])
  })

  it('should keep the content index within its bound by sampling, order-independently', () => {
    const index = new ContentIndex(2 * 1024 * 1024)
    const ref = index.addRequest({ id: 'r', principal: 'p', startMs: 0, where: 'w' })
    for (let i = 1; i <= 200_000; i++) index.add((i * 2654435761) % 2 ** 52, ref)
    const stats = index.stats()
    expect(stats.bytes).toBeLessThanOrEqual(stats.budgetBytes)
    expect(stats.sampleLevel).toBeGreaterThan(0)
    // Every kept fingerprint is in the sample, and looked up as sent.
    expect(index.lookup((2 ** stats.sampleLevel * 7) % 2 ** 52)).toBeUndefined()
  })

  it('should draw progress on a terminal only, and clear it before the report', async () => {
    expect(
      auditProgressLine(
        { pass: 1, file: 'a', read: 5e6, total: 2e7, records: 900, findings: 0 },
        80,
      ),
    ).toBe('[####··························] indexing 5.0/20.0 MB · 900 records')
    expect(
      auditProgressLine(
        { pass: 2, file: 'a', read: 2e7, total: 2e7, records: 900, findings: 3 },
        100,
      ),
    ).toMatch(/^\[#{30}\] judging 20\.0\/20\.0 MB · 900 records · 3 suspicious$/)
    let stderr = ''
    let stdout = ''
    const code = await auditCommand([path('clean.jsonl')], {
      stdout: (t) => {
        stdout += t
      },
      stderr: (t) => {
        stderr += t
      },
      isTTY: true,
      columns: 100,
      open: nodeLogSource,
    })
    expect(code).toBe(0)
    expect(stdout).toContain('No request of 2')
    // Whatever was drawn ends cleared (the report on stdout is never mixed with the bar).
    if (stderr !== '') expect(stderr.endsWith('\r\x1b[2K')).toBe(true)
  })
})
