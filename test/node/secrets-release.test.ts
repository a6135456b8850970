import fc from 'fast-check'
import { beforeAll, describe, expect, it } from 'vitest'
import type { AttemptContext } from '../../src/core/attempt/context'
import { importCanaryKey, tenantTag } from '../../src/core/canary/token'
import { GuardError } from '../../src/core/errors'
import { type Channel, type Frame, parseFrame } from '../../src/core/format/frames'
import { applyEdits } from '../../src/core/release/edits'
import { Release } from '../../src/core/release/release-stream'
import type { AnswerView } from '../../src/core/verify/check'
import { AnswerJudge } from '../../src/core/verify/stream-judge'
import type { StandInFinding } from '../../src/core/vocabulary/evidence-plugins'
import type { Edit } from '../../src/core/vocabulary/release-judge'
import { importStandInKey, StandInBook } from '../../src/plugins/secrets'
import { StandInCheck } from '../../src/plugins/secrets/stand-in-check'
import { GENERATORS, rng } from '../secrets/generate'
import { endsOf, everyPosition } from '../secrets/splits'
import { restoredAsWhole } from '../support/secrets'

/**
 * The release stage's stand-in restoration as a property: a channel's text cut into events at every
 * position (and at random), each event released once the judge has judged past it, with the edits
 * known then applied to it the way `#emit` in src/core/release/release-stream.ts applies them, gives
 * exactly `book.restore(wholeText).text` — values JSON-escaped in a JSON channel. Another request's
 * stand-in ends the stream, with the error `onForeign` returns, before any of its characters leave.
 */

const SECRET = 'a test secret of at least thirty-two bytes'
let book: StandInBook
let other: StandInBook
/** This request's stand-ins of every generated kind, with their values. */
const own: { name: string; standIn: string; value: string }[] = []
const foreign: { kind: string; standIn: string }[] = []

beforeAll(async () => {
  const key = await importStandInKey(SECRET)
  book = await StandInBook.open(key, { requestId: 'req-release', tenant: 'acme' })
  other = await StandInBook.open(key, { requestId: 'req-other', tenant: 'globex' })
  const r = rng(42)
  for (const name of Object.keys(GENERATORS)) {
    for (let i = 0; i < 2; i++) {
      const { kind, value, line } = GENERATORS[name]!(r)
      const [before, after] = line.split('$') as [string, string]
      const mine = (await book.substitute(before + value + after)).text
      own.push({ name, value, standIn: mine.slice(before.length, mine.length - after.length) })
      const g = GENERATORS[name]!(r)
      const theirs = (await other.substitute(before + g.value + after)).text
      foreign.push({ kind, standIn: theirs.slice(before.length, theirs.length - after.length) })
    }
  }
})

/** What leaves for one channel; `error` when the judge ended the stream (with what left before). */
interface Released {
  text: string
  error?: unknown
}

/**
 * A channel's events through a judge as the release stage moves them: each event queued, the channel
 * judged, every queued event lying before the judged point released with the edits known now.
 */
async function release(
  judge: StandInCheck,
  channel: Channel,
  text: string,
  ends: readonly number[],
): Promise<Released> {
  const strips: Edit[] = []
  const queue: { start: number; end: number }[] = []
  let out = ''
  const flush = (upTo: number) => {
    while (queue.length > 0 && queue[0]!.end <= upTo) {
      const { start, end } = queue.shift()!
      out += applyEdits(text.slice(start, end), start, strips)
    }
  }
  try {
    let start = 0
    for (const end of ends) {
      queue.push({ start, end })
      judge.read(channel, text.slice(start, end))
      strips.push(...(await judge.judgeWindow(channel, end === text.length, () => ({}))))
      flush(judge.judgedTo(channel))
      start = end
    }
    strips.push(...(await judge.judgeWindow(channel, true, () => ({}))))
    flush(text.length)
    return { text: out }
  } catch (error) {
    return { text: out, error }
  }
}

/** What the stream's judge shows a check; these tests read the check's edits as it returns them. */
const VIEW: AnswerView = {
  latest: undefined,
  finishReason: undefined,
  channels: () => [],
  seen: () => ({}),
  seenText: () => '',
  cut: () => {},
}

function judgeFor(jsonContent = false, found: StandInFinding[] = []): StandInCheck {
  return new StandInCheck(
    {
      book,
      jsonContent,
      onForeign: async (finding) => {
        found.push(finding)
        return new GuardError('response_quarantined', `foreign ${finding.kind}`)
      },
    },
    VIEW,
  )
}

/** The whole text with this request's values in place, escaped when the channel is JSON. */
async function restoredWhole(text: string, json: boolean): Promise<string> {
  const { own: found } = await book.locate(text)
  const whole = (await restoredAsWhole(book, text, json)).text
  // The whole-answer path (src/plugins/secrets/stand-in-evidence.ts) and, outside JSON, book.restore agree.
  if (!json && found.every((r) => r.lineBreak === undefined)) {
    expect((await book.restore(text)).text).toBe(whole)
  }
  return whole
}

const PROSE = [
  'The key is ',
  ' and then ',
  '. ',
  '\n',
  ' 1234 5678 ',
  ' NOTE THE VALUE ',
  '{"a":[1,2]}',
  ', ',
  'x',
  ' ',
]

/** Prose with this request's stand-ins in it. */
const answer = fc
  .array(fc.tuple(fc.nat(), fc.nat()), { minLength: 1, maxLength: 6 })
  .map((parts) =>
    parts.map(([p, s]) => PROSE[p % PROSE.length]! + own[s % own.length]!.standIn).join(''),
  )

const pieces = fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 100 })

describe('applyEdits', () => {
  it('should replace a span with its value', () => {
    expect(applyEdits('abc', 0, [{ start: 1, end: 2, value: 'X' }])).toBe('aXc')
    expect(applyEdits('abc', 0, [])).toBe('abc')
  })

  it('should cut a span without a value', () => {
    expect(applyEdits('abcdef', 10, [{ start: 11, end: 13 }])).toBe('adef')
  })

  it('should write the value where the edit starts and only cut its rest in later pieces', () => {
    const edits: Edit[] = [{ start: 6, end: 13, value: 'VALUE' }]
    const text = 'hello STANDIN world'
    const first = applyEdits(text.slice(0, 9), 0, edits)
    const second = applyEdits(text.slice(9, 11), 9, edits)
    const third = applyEdits(text.slice(11), 11, edits)
    expect([first, second, third]).toEqual(['hello VALUE', '', 'N world'.slice(1)])
    expect(first + second + third).toBe('hello VALUE world')
  })

  it('should apply edits in order whatever order they come in, and leave them unchanged', () => {
    const edits: Edit[] = [
      { start: 8, end: 9, value: 'Y' },
      { start: 2, end: 4, value: 'X' },
    ]
    const copy = structuredClone(edits)
    expect(applyEdits('0123456789', 0, edits)).toBe('01X4567Y9')
    expect(edits).toEqual(copy)
  })

  it('should ignore edits outside the piece, including one ending where it starts', () => {
    const edits: Edit[] = [
      { start: 0, end: 5, value: 'A' },
      { start: 20, end: 25, value: 'B' },
    ]
    expect(applyEdits('567890', 5, edits)).toBe('567890')
    expect(applyEdits('', 5, edits)).toBe('')
  })

  it('should give a value that starts in the piece whole even when its span runs past the piece', () => {
    expect(applyEdits('ab', 0, [{ start: 1, end: 10, value: 'LONG VALUE' }])).toBe('aLONG VALUE')
  })
})

describe('StandInCheck', () => {
  it('should restore every own stand-in of every kind, split at every position', async () => {
    for (const { standIn, value } of own) {
      const text = `Here: ${standIn} — done.`
      const out = await release(judgeFor(), 'content', text, everyPosition(text))
      expect(out.error).toBeUndefined()
      expect(out.text).toBe(`Here: ${value} — done.`)
    }
  })

  it('should release exactly the whole restoration, split at every position', async () => {
    await fc.assert(
      fc.asyncProperty(answer, async (text) => {
        const out = await release(judgeFor(), 'content', text, everyPosition(text))
        expect(out.error).toBeUndefined()
        expect(out.text).toBe(await restoredWhole(text, false))
      }),
      { numRuns: 120, seed: 7 },
    )
  })

  it('should release exactly the whole restoration, split at random', async () => {
    await fc.assert(
      fc.asyncProperty(answer, pieces, async (text, lengths) => {
        const out = await release(judgeFor(), 'content', text, endsOf(text, lengths))
        expect(out.text).toBe(await restoredWhole(text, false))
      }),
      { numRuns: 400, seed: 7 },
    )
  })

  it('should restore values inside tool-call JSON escaped, so the arguments parse to the values', async () => {
    // Not the escaped-PEM generator: its value holds `\n` as two characters, which JSON escapes
    // again, so the model's copy no longer matches the stand-in (nor does the whole text's).
    const usable = own.filter((o) => o.name !== 'private-key-escaped')
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.nat(), { minLength: 1, maxLength: 5 }),
        pieces,
        async (which, lengths) => {
          const chosen = which.map((i) => usable[i % usable.length]!)
          // PEM stand-ins with real newlines are written escaped, as a model writes JSON.
          const args = JSON.stringify({ notes: chosen.map((c) => `use ${c.standIn} now`) })
          for (const channel of ['tool:0', 'content'] as const) {
            for (const ends of [everyPosition(args), endsOf(args, lengths)]) {
              // A JSON-mode request's content is JSON too.
              const out = await release(judgeFor(channel === 'content'), channel, args, ends)
              expect(out.text).toBe(await restoredWhole(args, true))
              expect(JSON.parse(out.text)).toEqual({
                notes: chosen.map((c) => `use ${c.value} now`),
              })
            }
          }
        },
      ),
      { numRuns: 40, seed: 7 },
    )
  })

  it('should escape values only in JSON channels: tool calls, and content in JSON mode', async () => {
    const pem = own.find((o) => o.name === 'private-key')!
    expect(pem.value).toContain('\n')
    const text = `key: ${pem.standIn}`
    const escaped = `key: ${JSON.stringify(pem.value).slice(1, -1)}`
    const run = (json: boolean, channel: Channel) =>
      release(judgeFor(json), channel, text, everyPosition(text))
    expect((await run(false, 'content')).text).toBe(`key: ${pem.value}`)
    expect((await run(true, 'reasoning')).text).toBe(`key: ${pem.value}`)
    expect((await run(true, 'content')).text).toBe(escaped)
    expect((await run(false, 'tool:3')).text).toBe(escaped)
  })

  it("should end the stream with onForeign's error before any of another request's stand-in leaves", async () => {
    const globex = await tenantTag(await importCanaryKey(SECRET), 'globex')
    for (const { kind, standIn } of foreign) {
      const lead = `Here: ${own[0]!.standIn} and then `
      const text = `${lead}${standIn} and more text after it.`
      for (const ends of [everyPosition(text), [text.length], [lead.length + 3, text.length]]) {
        const found: StandInFinding[] = []
        const out = await release(judgeFor(false, found), 'content', text, ends)
        expect(out.error, `${kind} ${ends.length}`).toBeInstanceOf(GuardError)
        expect((out.error as GuardError).message).toBe(`foreign ${kind}`)
        expect(found).toHaveLength(1)
        expect(found[0]!.kind).toBe(kind)
        expect(found[0]!.channel).toBe('content')
        if (found[0]!.tenantTag !== undefined) expect(found[0]!.tenantTag).toBe(globex)
        // What left is the lead restored, at most: nothing of the foreign stand-in.
        expect(`Here: ${own[0]!.value} and then `.startsWith(out.text), out.text).toBe(true)
      }
    }
  })

  it('should pass the seen texts to onForeign and judge each channel on its own', async () => {
    const seen: Record<string, string>[] = []
    const judge = new StandInCheck(
      {
        book,
        jsonContent: false,
        onForeign: async (_finding, texts) => {
          seen.push(texts)
          return new GuardError('response_quarantined', 'leak')
        },
      },
      VIEW,
    )
    const reasoning = `thinking about ${own[1]!.standIn} `
    judge.read('reasoning', reasoning)
    const edits = await judge.judgeWindow('reasoning', false, () => ({ reasoning }))
    expect(judge.judgedTo('reasoning')).toBe(reasoning.length - 1) // the trailing space held
    expect(judge.judgedTo('content')).toBe(0)
    expect(judge.pending('content')).toBe(false) // nothing of it yet
    judge.read('content', 'x')
    expect(judge.pending('content')).toBe(true)
    expect(edits).toEqual([
      {
        start: 'thinking about '.length,
        end: 'thinking about '.length + own[1]!.standIn.length,
        value: own[1]!.value,
      },
    ])
    const content = `answer ${foreign[0]!.standIn}`
    judge.read('content', content)
    await expect(judge.judgeWindow('content', true, () => ({ content }))).rejects.toThrow('leak')
    expect(seen).toEqual([{ content }])
  })

  it('should report edits at positions from the start of the channel, after what it judged was dropped', async () => {
    const judge = judgeFor()
    const head = 'x'.repeat(50)
    const full = `${head} key ${own[2]!.standIn} end`
    judge.read('content', full.slice(0, 41))
    await judge.judgeWindow('content', false, () => ({}))
    // A run without whitespace could still be a stand-in forming: held from its start.
    expect(judge.judgedTo('content')).toBe(0)
    // A trailing space is a group character (a card's next group may follow): held with the word.
    judge.read('content', full.slice(41, 51))
    await judge.judgeWindow('content', false, () => ({}))
    expect(judge.judgedTo('content')).toBe(50)
    // Many judged windows later the check has dropped the text it judged: positions stay absolute.
    const words = 'plain words here '.repeat(40)
    judge.read('content', words)
    await judge.judgeWindow('content', false, () => ({}))
    expect(judge.judgedTo('content')).toBeGreaterThan(51 + words.length - 20)
    const rest = ` key ${own[2]!.standIn} end`
    judge.read('content', rest)
    const edits = await judge.judgeWindow('content', true, () => ({}))
    const at = 51 + words.length + ' key '.length
    expect(edits).toEqual([{ start: at, end: at + own[2]!.standIn.length, value: own[2]!.value }])
  })
})

describe('StandInCheck: regression', () => {
  // The release-stage view of the personnummer case in test/node/secrets-hold-back.test.ts: an own
  // stand-in YYMMDD-NNNC written with a century before it, then a long run without whitespace. Split
  // once at 247, the judge reported two overlapping edits (13–26 as a "rewritten" 12-digit stand-in,
  // 15–26 exact) and applyEdits wrote the value for both ("Personnummer <value><value>,…"); the
  // whole answer restores to "Personnummer 19<value>,…". Fixed in 203602a.
  it('should write an own personnummer once when an event ends inside the run after it', async () => {
    const r = rng(5)
    let standIn = ''
    let value = ''
    while (!/^\d{6}-\d{4}$/.test(standIn)) {
      const g = GENERATORS['se-personnummer']!(r)
      const text = (await book.substitute(`Personnummer ${g.value} registrerat.`)).text
      standIn = text.slice(13, 13 + g.value.length)
      value = g.value
    }
    const text = `Personnummer 19${standIn},${'{"a":[1,2]}'.repeat(30)}`
    for (const split of [247, 248, 100, 20]) {
      const out = await release(judgeFor(), 'content', text, [split, text.length])
      expect(out.text).toBe(await restoredWhole(text, false))
      expect(out.text.startsWith(`Personnummer 19${value},`)).toBe(true)
    }
  })
})

describe('StandInCheck: a PEM stand-in written with its line breaks escaped', () => {
  // A PEM stand-in is recognised with its line breaks real, escaped (`\n`) or escaped twice (`\\n`).
  // Its value used to go back with the line breaks the secret had (escaped once more in a JSON
  // channel), whatever escaping the model applied around the stand-in. Fixed in bfce954.
  const restoreIn = async (channel: Channel, text: string) => {
    const judge = judgeFor()
    judge.read(channel, text)
    return applyEdits(text, 0, await judge.judgeWindow(channel, true, () => ({})))
  }

  // JSON inside a JSON string (a config blob passed as a string argument): the stand-in appears
  // as `\\n`, the value goes in as `\n`, and the inner JSON gets raw line breaks in a string.
  it('should keep JSON inside a tool argument valid, the value in it', async () => {
    const pem = own.find((o) => o.name === 'private-key')!
    const args = JSON.stringify({ config: JSON.stringify({ key: pem.standIn }) })
    const out = JSON.parse(await restoreIn('tool:0', args)) as { config: string }
    expect(JSON.parse(out.config)).toEqual({ key: pem.value })
  })

  // A regression found here: when a PEM found with other line breaks had every break of its value
  // rewritten to the one found, a key sent with CRLF line breaks and copied by the model into JSON
  // arguments (`\n`, its stand-in has LF) came back with LF. Only the escaping may change.
  it('should restore a PEM with CRLF line breaks exactly in tool arguments', async () => {
    const { value: lf } = GENERATORS['private-key']!(rng(3))
    const crlf = lf.replace(/\n/g, '\r\n')
    const sent = (await book.substitute(`key:\n${crlf}\nend`)).text
    const standIn = sent.slice('key:\n'.length, sent.length - '\nend'.length)
    expect(standIn).not.toContain('\r')
    expect((await book.restore(`x ${standIn} y`)).text).toBe(`x ${crlf} y`) // whole, exact: fine
    const args = JSON.stringify({ key: standIn })
    expect(JSON.parse(await restoreIn('tool:0', args))).toEqual({ key: crlf })
  })

  // The same in prose: a model writing a .env line puts the stand-in on one line with `\n`; the
  // value comes back with real line breaks inside the quotes, breaking the line.
  it('should keep a one-line escaped PEM on one line in prose', async () => {
    const pem = own.find((o) => o.name === 'private-key')!
    const line = (key: string) => `PRIVATE_KEY="${key.replace(/\n/g, '\\n')}"`
    expect(await restoreIn('content', line(pem.standIn))).toBe(line(pem.value))
  })
})

/**
 * The real release stage (src/core/release/release-stream.ts) with no canary and no content check: only
 * the stand-ins decide what leaves and how.
 */
function releaseStage(found: StandInFinding[] = [], jsonContent = false): Release {
  const ctx = {
    request: { tenant: 'acme' },
    services: {
      key: async () => {
        throw new Error('no canary in these tests')
      },
    },
  } as unknown as AttemptContext
  return new Release(
    [],
    new AnswerJudge(ctx, {
      strips: {},
      contentHoldBack: false,
      standIns: (view) =>
        new StandInCheck(
          {
            book,
            jsonContent,
            onForeign: async (finding) => {
              found.push(finding)
              return new GuardError('response_quarantined', `foreign ${finding.kind}`)
            },
          },
          view,
        ),
      onForeign: async () => new GuardError('response_quarantined', 'canary'),
    }),
  )
}

type Piece = { channel: 'content' | 'reasoning' | 'tool:0'; text: string }

/** One chat-completions stream event carrying `text` on one channel. */
function event({ channel, text }: Piece): Frame {
  const delta =
    channel === 'content'
      ? { content: text }
      : channel === 'reasoning'
        ? { reasoning_content: text }
        : { tool_calls: [{ index: 0, function: { arguments: text } }] }
  return parseFrame({ data: JSON.stringify({ choices: [{ index: 0, delta }] }) })
}

/** The client's texts per channel from the released SSE text. */
function clientTexts(sse: string): Record<Piece['channel'], string> {
  const out = { content: '', reasoning: '', 'tool:0': '' }
  for (const line of sse.split('\n')) {
    if (!line.startsWith('data: {')) continue
    const delta = JSON.parse(line.slice(6)).choices[0].delta
    out.content += delta.content ?? ''
    out.reasoning += delta.reasoning_content ?? ''
    out['tool:0'] += delta.tool_calls?.[0]?.function?.arguments ?? ''
  }
  return out
}

/** The pieces through the release stage, one event each, then `[DONE]`. */
async function stream(
  pieces: readonly Piece[],
  found: StandInFinding[] = [],
  jsonContent = false,
): Promise<{ texts: Record<Piece['channel'], string>; error?: unknown }> {
  const stage = releaseStage(found, jsonContent)
  const decoder = new TextDecoder()
  let sse = ''
  const add = (released: string | Uint8Array) => {
    sse += typeof released === 'string' ? released : decoder.decode(released)
  }
  try {
    for (const piece of pieces) add(await stage.take([event(piece)]))
    add(await stage.take([parseFrame({ data: '[DONE]' })]))
    add(await stage.finish())
    return { texts: clientTexts(sse) }
  } catch (error) {
    return { texts: clientTexts(sse), error }
  }
}

const cut = (channel: Piece['channel'], text: string, ends: readonly number[]): Piece[] =>
  ends.map((end, i) => ({ channel, text: text.slice(i === 0 ? 0 : ends[i - 1], end) }))

describe('the release stage (Release) with stand-ins', () => {
  it('should give the client the whole restoration, content split at every position', async () => {
    await fc.assert(
      fc.asyncProperty(answer, async (text) => {
        const out = await stream(cut('content', text, everyPosition(text)))
        expect(out.error).toBeUndefined()
        expect(out.texts.content).toBe(await restoredWhole(text, false))
      }),
      { numRuns: 40, seed: 7 },
    )
  })

  it('should restore tool-call arguments escaped, split at random', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
        pieces,
        async (which, lengths) => {
          const chosen = which
            .map((i) => own[i % own.length]!)
            .filter((o) => o.name !== 'private-key-escaped')
          const args = JSON.stringify({ notes: chosen.map((c) => `use ${c.standIn} now`) })
          const out = await stream(cut('tool:0', args, endsOf(args, lengths)))
          expect(out.error).toBeUndefined()
          expect(JSON.parse(out.texts['tool:0'])).toEqual({
            notes: chosen.map((c) => `use ${c.value} now`),
          })
        },
      ),
      { numRuns: 40, seed: 7 },
    )
  })

  it('should give the whole restoration of long answers (the stage trims what has left)', async () => {
    // Over 4,096 released characters the stage keeps only the last few of them: the judge then
    // reads a channel's text from a later position on.
    const long = fc
      .array(fc.tuple(fc.nat(), fc.nat()), { minLength: 60, maxLength: 90 })
      .map((parts) =>
        parts
          .map(
            ([p, s]) =>
              `${PROSE[p % PROSE.length]!.repeat(1 + (p % 9))}${own[s % own.length]!.standIn}`,
          )
          .join(''),
      )
    await fc.assert(
      fc.asyncProperty(long, pieces, async (text, lengths) => {
        expect(text.length).toBeGreaterThan(4096)
        const out = await stream(cut('content', text, endsOf(text, lengths)))
        expect(out.error).toBeUndefined()
        expect(out.texts.content).toBe(await restoredWhole(text, false))
      }),
      { numRuns: 12, seed: 7 },
    )
  })

  it("should end the stream before another request's stand-in leaves, split at every position", async () => {
    for (const { kind, standIn } of foreign.slice(0, 12)) {
      const text = `Look: ${standIn} and so on.`
      const found: StandInFinding[] = []
      const out = await stream(cut('content', text, everyPosition(text)), found)
      expect((out.error as GuardError).message).toBe(`foreign ${kind}`)
      expect(out.texts.content.length).toBeLessThanOrEqual('Look: '.length)
    }
  })

  // A channel that pauses (the answer moves on to another channel) is judged to its end at once, so
  // it does not hold the others back. If it then resumes, a stand-in split across the pause was
  // judged incomplete and its first part released. It is read again from where it could have begun:
  // another request's still ends the stream (it used to leave with no quarantine); this request's
  // cannot be restored any more (its first part has left) and reaches the client as the stand-in —
  // a documented limit (docs/secrets.md). Reasoning, then content, then reasoning again:
  it.fails('should restore an own stand-in split across a pause of its channel', async () => {
    const { standIn, value } = own.find((o) => o.name === 'github-token')!
    const out = await stream([
      { channel: 'reasoning', text: `think ${standIn.slice(0, 20)}` },
      { channel: 'content', text: 'Hi' },
      { channel: 'reasoning', text: `${standIn.slice(20)} done` },
      { channel: 'content', text: ' there' },
    ])
    expect(out.texts.reasoning).toBe(`think ${value} done`)
  })

  it("should end the stream on another request's stand-in split across a pause of its channel", async () => {
    const { standIn, kind } = foreign.find((f) => f.kind === 'github-token')!
    const out = await stream([
      { channel: 'reasoning', text: `think ${standIn.slice(0, 20)}` },
      { channel: 'content', text: 'Hi' },
      { channel: 'reasoning', text: `${standIn.slice(20)} done` },
      { channel: 'content', text: ' there' },
    ])
    expect((out.error as GuardError | undefined)?.message).toBe(`foreign ${kind}`)
  })

  // The personnummer case of the judge above, through the real stage.
  it('should write an own personnummer once when an event ends inside the run after it', async () => {
    const r = rng(5)
    let standIn = ''
    while (!/^\d{6}-\d{4}$/.test(standIn)) {
      const g = GENERATORS['se-personnummer']!(r)
      standIn = (await book.substitute(`Personnummer ${g.value} registrerat.`)).text.slice(
        13,
        13 + g.value.length,
      )
    }
    const text = `Personnummer 19${standIn},${'{"a":[1,2]}'.repeat(30)}`
    const out = await stream(cut('content', text, [247, text.length]))
    expect(out.texts.content).toBe(await restoredWhole(text, false))
  })
})
