/**
 * @module Honest multi-tenant traffic over the held-apart corpus (./corpus.ts), in time order: thirty
 * organisations and the 120 end users of one app (tenants sharing its system prompt) send their own
 * documents and code and ask about them; they paste texts the model knows by heart (a scaffold, a
 * classic, a manual's translators' footer), and, within the hour, other tenants ask for exactly those
 * texts and the model recites them — about a third of all answers carry model knowledge that one
 * other tenant pasted. Control answers quote 30–80 units of another tenant's private text sent
 * earlier: each must be withheld, a stream with nothing of the quote delivered.
 *
 * Which pieces the model knows is drawn per seed from every family alike: the mechanism under test
 * never sees that list (only the engine does, as a model's memory).
 */
import { prng } from '../../sim/random'
import { units, unitWeight, WORD_WEIGHT } from '../../src/plugins/foreign-content'
import { Knowledge } from '../support/knowing-engine'
import { type Family, type Piece, sevens } from './corpus'

/** What a turn's answer is, for the report. */
export type TurnKind = 'own' | 'paste' | 'recital' | 'control'

/** One request and the answer the model gives it. */
export interface HeldApartTurn {
  tenant: string
  messages: { role: string; content: string }[]
  stream: boolean
  /** The answer's reasoning and content (the engine adds the echo). */
  reasoning: string
  content: string
  kind: TurnKind
  family: string
  /** A recital of a known text another tenant pasted within the hour. */
  pasted: boolean
  /** A control: the answer quotes `quote`, private text of `source`. */
  control?: { source: string; quote: string }
  /** Milliseconds since the previous request (virtual time). */
  gapMs: number
}

export interface HeldApartTraffic {
  turns: HeldApartTurn[]
  /** The texts the model knows by heart (the engine's memory), with their titles. */
  known: Piece[]
}

/** The model's openers and sign-offs, per language of prose (code answers: English). */
const OPENERS: Record<string, readonly [string, string]> = {
  eng: ['Certainly! Here it is:', 'I hope this helps. Let me know if you need anything else.'],
  deu: ['Gerne! Hier ist der Text:', 'Ich hoffe, das hilft weiter.'],
  ita: ['Certo! Ecco il testo:', 'Spero che questo ti sia utile.'],
  rus: ['Конечно! Вот текст:', 'Надеюсь, это поможет.'],
  de: ['Gerne! Hier ist der Abschnitt:', 'Ich hoffe, das hilft weiter.'],
  fr: ['Bien sûr ! Voici le passage :', "J'espère que cela vous aide."],
  es: ['¡Claro! Aquí está el texto:', 'Espero que esto te ayude.'],
  pl: ['Oczywiście! Oto fragment:', 'Mam nadzieję, że to pomoże.'],
  ru: ['Конечно! Вот раздел:', 'Надеюсь, это поможет.'],
  ja: ['はい、該当する箇所です:', 'お役に立てば幸いです。'],
  en: ['Sure, here is that section:', 'I hope this helps.'],
  it: ['Certo! Ecco la sezione:', 'Spero che questo ti sia utile.'],
  nl: ['Natuurlijk! Hier is het gedeelte:', 'Ik hoop dat dit helpt.'],
  pt: ['Claro! Aqui está a secção:', 'Espero que isto ajude.'],
  sv: ['Självklart! Här är avsnittet:', 'Jag hoppas att det hjälper.'],
  uk: ['Звісно! Ось цей розділ:', 'Сподіваюся, це допоможе.'],
  ko: ['네, 해당 부분입니다:', '도움이 되었기를 바랍니다.'],
  zh_CN: ['好的，这是相关部分：', '希望这对你有帮助。'],
}

const APP_SYSTEM =
  'You are the assistant of Orbit Notes, a note-taking app. Answer the user about their notes and ' +
  'code, quote exactly when asked, and keep answers short.'

const pick = <T>(random: () => number, items: readonly T[]): T =>
  items[Math.floor(random() * items.length)]!

/** A unit's weight in words: 1 for a word, ½ for a Han or kana character, ⅓ for Thai and the like. */
const weightOf = (unit: string) => unitWeight(unit.codePointAt(0)!) / WORD_WEIGHT

/**
 * A quote of `text` weighing `min`–`max` words (a spaced script's words; two Han or kana characters
 * to a word, three Thai), starting at a unit boundary; undefined when the text weighs less.
 */
function quoteOf(random: () => number, text: string, min: number, max: number): string | undefined {
  const list = units(text)
  const weights = list.map((u) => weightOf(u.text))
  const total = weights.reduce((a, b) => a + b, 0)
  if (total < min) return undefined
  const want = min + random() * (Math.min(max, total) - min)
  for (let tries = 0; tries < 8; tries++) {
    const from = Math.floor(random() * list.length)
    let weight = 0
    for (let i = from; i < list.length; i++) {
      weight += weights[i]!
      if (weight >= want) return text.slice(list[from]!.start, list[i]!.end)
    }
  }
  return undefined
}

/**
 * Distinct runs of seven units in a text: a quote of a line repeated (a grammar's alternatives, a
 * table's rows) has far fewer than its length, and the check counts distinct text (docs/limits.md).
 */
function distinctShingles(text: string): number {
  const list = units(text).map((u) => u.text)
  const seen = new Set<string>()
  for (let i = 7; i <= list.length; i++) seen.add(list.slice(i - 7, i).join(' '))
  return seen.size
}

/** A slice of `text` of `min`–`max` units, starting at a unit boundary. */
function slice(random: () => number, text: string, min: number, max: number): string {
  const list = units(text)
  if (list.length <= min) return text
  const length = Math.min(list.length, min + Math.floor(random() * (max - min + 1)))
  const from = Math.floor(random() * (list.length - length + 1))
  return text.slice(list[from]!.start, list[from + length - 1]!.end)
}

/**
 * The traffic of one seed: `count` honest answers and about 2% controls.
 *
 * @example
 * const traffic = heldApartTraffic(heldApartFamilies(), { count: 2_000, seed: 1 })
 */
export function heldApartTraffic(
  families: readonly Family[],
  options: { count: number; seed: number },
): HeldApartTraffic {
  const random = prng(options.seed)
  // Per family, a third of the pieces are what the model knows; the rest are tenants' own.
  const known = new Map<string, Piece[]>()
  const own = new Map<string, string[]>()
  // A text in two families (the same fortune in two languages' collections) is on one side only.
  const seen = new Set<string>()
  for (const family of families) {
    const k: Piece[] = []
    const o: string[] = []
    for (const piece of family.pieces) {
      const key = piece.text.toLowerCase().replace(/\s+/g, ' ')
      if (seen.has(key)) continue
      seen.add(key)
      if (random() < 1 / 3) k.push(piece)
      else o.push(piece.text)
    }
    known.set(family.name, k)
    own.set(family.name, o)
  }
  const memory = new Knowledge([...known.values()].flat())
  const orgs = Array.from({ length: 30 }, (_, i) => `org-${i + 1}`)
  const users = Array.from({ length: 120 }, (_, i) => `orbit-user-${i + 1}`)
  /** Known texts pasted, by family: who and when. */
  const pastes = new Map<string, { tenant: string; piece: Piece; at: number }[]>()
  /** Private texts sent: what a control may quote. */
  const sent: { tenant: string; text: string; at: number }[] = []
  /** Who sent each private text: one sender makes it private; two make it common (not a control). */
  const senders = new Map<string, Set<string>>()
  const turns: HeldApartTurn[] = []
  /**
   * Who sent or was answered each run of seven units so far: a control's quote must be private, every
   * run of it the source's alone (text two tenants sent is common to the check, a documented limit).
   */
  const heard = new Map<string, Set<string>>()
  const privateTo = (quote: string, source: string) =>
    sevens(quote).every((run) => [...(heard.get(run) ?? [])].every((t) => t === source))
  let clock = 0
  let honest = 0
  while (honest < options.count) {
    const last = turns.at(-1)
    if (last) {
      for (const text of [...last.messages.map((m) => m.content), last.content]) {
        for (const run of sevens(text))
          heard.set(run, (heard.get(run) ?? new Set()).add(last.tenant))
      }
    }
    const gapMs = Math.floor(500 + random() * 3_000)
    clock += gapMs
    const appUser = random() < 0.4
    const tenant = appUser ? pick(random, users) : pick(random, orgs)
    const system = appUser ? [{ role: 'system', content: APP_SYSTEM }] : []
    const family = pick(random, families)
    const [opener, signOff] =
      OPENERS[family.kind === 'code' ? 'eng' : family.language] ?? OPENERS.eng!
    const stream = random() < 0.5
    const recent = (pastes.get(family.name) ?? []).filter(
      (p) => p.tenant !== tenant && clock - p.at < 3_600_000,
    )
    const roll = random()
    if (roll < 0.04 && sent.length > 0) {
      // A control: another tenant's private text, quoted though this prompt never held it.
      const candidates = sent.filter(
        (s) => s.tenant !== tenant && clock - s.at < 3_000_000 && senders.get(s.text)!.size === 1,
      )
      const source = candidates.length > 0 ? pick(random, candidates) : undefined
      // At least 30 words' weight (60 Han or kana characters) that the model does not know: private.
      const quote = source && quoteOf(random, source.text, 30, 80)
      if (
        source &&
        quote &&
        memory.familiarity(quote) <= 0.2 &&
        distinctShingles(quote) >= 24 &&
        privateTo(quote, source.tenant)
      ) {
        turns.push({
          tenant,
          messages: [
            ...system,
            { role: 'user', content: 'What did we discuss earlier? Be brief.' },
          ],
          stream,
          reasoning: 'The user asks about an earlier discussion.',
          content: `${opener}\n\n${quote}\n\n${signOff}`,
          kind: 'control',
          family: family.name,
          pasted: false,
          control: { source: source.tenant, quote },
          gapMs,
        })
        continue
      }
    }
    honest++
    if (roll < 0.37 && recent.length > 0) {
      // Another tenant pasted it within the hour; this one asks for it and the model recites it.
      const { text, title } = pick(random, recent).piece
      turns.push({
        tenant,
        messages: [...system, { role: 'user', content: `Please show me ${title}, exactly.` }],
        stream,
        reasoning: 'The user wants a text I know by heart; I will write it out.',
        content: `${opener}\n\n${text}\n\n${signOff}`,
        kind: 'recital',
        family: family.name,
        pasted: true,
        gapMs,
      })
      continue
    }
    if (roll < 0.6) {
      // A paste of something the model knows, asked about: the answer quotes the tenant's own paste.
      const piece = pick(random, known.get(family.name)!)
      const text = piece.text
      const list = pastes.get(family.name) ?? []
      list.push({ tenant, piece, at: clock })
      pastes.set(family.name, list)
      turns.push({
        tenant,
        messages: [...system, { role: 'user', content: `Can you explain this?\n\n${text}` }],
        stream,
        reasoning: 'The user pasted a text and asks what it means.',
        content: `${opener}\n\n${slice(random, text, 10, 40)}\n\nThis is a well-known passage. ${signOff}`,
        kind: 'paste',
        family: family.name,
        pasted: false,
        gapMs,
      })
      continue
    }
    // The tenant's own document, summarised and quoted.
    const text = pick(random, own.get(family.name)!)
    sent.push({ tenant, text, at: clock })
    senders.set(text, (senders.get(text) ?? new Set()).add(tenant))
    turns.push({
      tenant,
      messages: [
        ...system,
        {
          role: 'user',
          content: `Here is my ${family.kind === 'code' ? 'code' : 'document'}:\n\n${text}\n\nWhat does it say?`,
        },
      ],
      stream,
      reasoning: 'The user shares their own material.',
      content: `${opener}\n\n${slice(random, text, 10, 60)}\n\n${signOff}`,
      kind: 'own',
      family: family.name,
      pasted: false,
      gapMs,
    })
  }
  return { turns, known: [...known.values()].flat() }
}
