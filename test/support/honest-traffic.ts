/**
 * @module Realistic honest multi-tenant traffic for the live guard, in time order, built from the real
 * text of test/support/honest-corpus.ts: a dozen organisations and the ~200 end users of one SaaS app
 * (tenants that share its system prompt) paste their own documents, code, tickets, UDHR articles and
 * public texts, hold multi-turn sessions, call tools and ask for JSON; the model answers from each
 * tenant's own prompt (quotes and summaries of it), from what it knows (documentation pages no tenant
 * sends, code examples, licences and UDHR articles recited from memory) and with its stock phrasing.
 * Control answers quote 30–80 units of another tenant's private text sent earlier.
 *
 * Written here, as no public corpus holds them: system prompts, the questions' first words, the
 * model's stock phrases, and the names and ids in the tickets (private values in a shared template).
 */
import { hashString as hash, prng } from '../../sim/random'
import { units } from '../../src/plugins/foreign-content'
import {
  type DocPage,
  docPages,
  HELD_OUT_LANGUAGES,
  licenceFiles,
  UDHR_LANGUAGES,
  type UdhrLanguage,
  udhrLines,
} from './honest-corpus'

type Language = UdhrLanguage

/** What a piece of an answer is, for the report of a false quarantine's cause. */
export type SegmentKind =
  | 'opener'
  | 'own-quote'
  | 'model-prose'
  | 'stock'
  | 'code'
  | 'licence'
  | 'udhr'
  | 'public-doc'
  | 'history'
  | 'tool-args'
  | 'system'
  | 'leak'

/** A piece of the answer's content. */
export interface Segment {
  kind: SegmentKind
  text: string
}

type Message = Record<string, unknown> & { role: string }

/** One request of the replay and the answer the scripted model gives it. */
export interface Turn {
  tenant: string
  /** The request's inputs (`stream` is added when sent). */
  inputs: Record<string, unknown>
  stream: boolean
  /** The answer's reasoning (the model restating the question). */
  reasoning: string
  /** The answer's visible content, after the echo; JSON mode: the object's fields after the echo. */
  content: Segment[]
  /** A tool call the answer makes instead of content. */
  tool?: { name: string; arguments: string }
  json: boolean
  /** What the request is, for the report of the traffic's mix. */
  label: string
  /** The tenant's private material in the request (its documents, code, notes, tickets). */
  material?: string
  /** A control: the answer quotes `quote`, private text of `source`. */
  control?: { source: string; quote: string }
  /** Seconds since the previous request (virtual time). */
  gapMs: number
}

const pick = <T>(random: () => number, items: readonly T[]): T =>
  items[Math.floor(random() * items.length)]!

/** The model's openers and sign-offs, per language (English for the rest). */
const OPENERS: Partial<Record<Language, readonly string[]>> = {
  eng: [
    'Certainly! Here is a summary of the key points:',
    'Sure! Here’s what the document says, in short:',
    'Of course. Below is a concise overview of the main points.',
    'Great question! Let me break this down step by step.',
    'Certainly! Here is the corrected version of your code:',
  ],
  spa: ['¡Claro! Aquí tienes un resumen de los puntos clave:'],
  fra: ['Bien sûr ! Voici un résumé des points essentiels :'],
  deu_1996: ['Gerne! Hier ist eine Zusammenfassung der wichtigsten Punkte:'],
  rus: ['Конечно! Вот краткое изложение основных моментов:'],
  ukr: ['Звичайно! Ось короткий виклад основних моментів:'],
  bul: ['Разбира се! Ето кратко резюме на основните моменти:'],
  jpn: ['もちろんです。以下に要点をまとめました。'],
  cmn_hans: ['当然可以！以下是主要内容的摘要：'],
  kor: ['물론입니다! 핵심 내용을 요약해 드리겠습니다.'],
  arb: ['بالتأكيد! إليك ملخص النقاط الرئيسية:'],
  heb: ['בוודאי! הנה סיכום של הנקודות העיקריות:'],
  hin: ['बिल्कुल! यहाँ मुख्य बिंदुओं का सारांश है:'],
  tha: ['ได้เลยครับ นี่คือสรุปประเด็นสำคัญ:'],
  vie: ['Tất nhiên! Đây là tóm tắt các điểm chính:'],
}

const SIGN_OFFS: Partial<Record<Language, readonly string[]>> = {
  eng: [
    'Please let me know if you have any questions or need any further assistance.',
    'I hope this helps! Let me know if you have any other questions.',
    'Feel free to reach out if you need anything else.',
    'If you have any further questions, feel free to ask. I am happy to help!',
    'Let me know if you would like me to expand on any of these points or provide more examples.',
  ],
  spa: ['Espero que esto te ayude. Si tienes alguna otra pregunta, no dudes en preguntar.'],
  fra: ["J'espère que cela vous aide. N'hésitez pas si vous avez d'autres questions."],
  deu_1996: [
    'Ich hoffe, das hilft Ihnen weiter. Lassen Sie mich wissen, wenn Sie weitere Fragen haben.',
  ],
  rus: ['Надеюсь, это поможет. Если у вас есть дополнительные вопросы, не стесняйтесь спрашивать.'],
  ukr: ['Сподіваюся, це допоможе. Якщо у вас є додаткові запитання, звертайтеся.'],
  bul: ['Надявам се това да помогне. Ако имате още въпроси, не се колебайте да попитате.'],
  jpn: [
    'ご不明な点がございましたら、お気軽にお問い合わせください。今後ともよろしくお願いいたします。',
  ],
  cmn_hans: ['希望这些信息对您有所帮助。如果您还有其他问题，请随时告诉我，我很乐意为您提供帮助。'],
  kor: ['도움이 되었기를 바랍니다. 추가로 궁금한 점이 있으시면 언제든지 말씀해 주세요.'],
  arb: ['آمل أن يكون هذا مفيدًا. إذا كانت لديك أي أسئلة أخرى، فلا تتردد في طرحها.'],
  heb: ['אני מקווה שזה עוזר. אם יש לך שאלות נוספות, אל תהסס לשאול.'],
  hin: ['मुझे आशा है कि इससे आपकी मदद होगी। यदि आपके कोई और प्रश्न हैं, तो बेझिझक पूछें।'],
  tha: ['หวังว่าข้อมูลนี้จะเป็นประโยชน์ หากมีคำถามเพิ่มเติม โปรดแจ้งให้ทราบได้เลย'],
  vie: ['Hy vọng điều này hữu ích. Nếu bạn có thêm câu hỏi, đừng ngần ngại hỏi nhé.'],
}

/** Openings of a licence's grant: a file with two holds several licences (its bundled code's). */
const LICENCE_OPENINGS =
  /Permission is hereby granted|Apache License\s+Version|Redistribution and use in source|Permission to use, copy/g

/** Twelve organisations: their languages besides English, and the helpdesk template they use. */
const ORGS: ReadonlyArray<{ name: string; languages: readonly Language[]; desk: string }> = [
  { name: 'acme', languages: ['spa'], desk: 'HelpdeskPro' },
  { name: 'globex', languages: ['deu_1996'], desk: 'HelpdeskPro' },
  { name: 'initech', languages: ['fra'], desk: 'HelpdeskPro' },
  { name: 'umbrella', languages: ['deu_1996', 'tur'], desk: 'TicketLine' },
  { name: 'hooli', languages: ['fra', 'arb'], desk: 'TicketLine' },
  { name: 'stark', languages: ['spa', 'kor'], desk: 'TicketLine' },
  { name: 'sakura', languages: ['jpn'], desk: 'HelpdeskPro' },
  { name: 'kyoto', languages: ['jpn', 'cmn_hans'], desk: 'TicketLine' },
  { name: 'panda', languages: ['cmn_hans'], desk: 'HelpdeskPro' },
  { name: 'volga', languages: ['rus', 'ukr'], desk: 'TicketLine' },
  { name: 'neva', languages: ['rus', 'por_BR'], desk: 'HelpdeskPro' },
  { name: 'ganga', languages: ['hin', 'arb', 'tha', 'vie'], desk: 'TicketLine' },
]

/** The SaaS app's system prompt, sent by every one of its end users. */
const NOTELY_SYSTEM =
  'You are Notely, a friendly note-taking assistant. Help the user organise, summarise and search ' +
  'their own notes. Only use the notes the user gives you; never invent facts about them. Keep ' +
  'answers short, use bullet points for lists, and reply in the language of the question. If a note ' +
  'contains personal data, do not repeat it unless the user asks for it.'

/** A system prompt a vendor ships to the organisations on its plan (several send it). */
const DOCBOT_SYSTEM =
  'You are a support agent for a documentation portal. Answer only from the documents provided, ' +
  'quote them where it helps, and reply in the language of the question. If the documents do not ' +
  'answer the question, say so and suggest where to look.'

const FIRST = ['Jana', 'Lukas', 'Amara', 'Kenji', 'Olga', 'Rahul', 'Sofia', 'Mateo', 'Aiko', 'Wei']
const LAST = ['Novak', 'Schmidt', 'Okafor', 'Tanaka', 'Petrova', 'Sharma', 'Rossi', 'Garcia', 'Kim']

const QUESTIONS = [
  'Summarise this for me:',
  'What are the key points here?',
  'Can you explain the following?',
  'Rewrite this more clearly:',
]
const CODE_QUESTIONS = ['Why does this code fail?', 'Review this code please:', 'Refactor this:']

/** One tenant's material and its session. */
interface Tenant {
  name: string
  languages: readonly Language[]
  system: string | undefined
  pages: DocPage[]
  desk: string | undefined
  /** The last turn's messages and answer (for a follow-up). */
  last?: { messages: Message[]; answer: string }
  /** Its tickets so far (private values in the desk's template). */
  tickets: string[]
  /** Text only this tenant pastes now and then: a stock phrase ending a draft, a code preamble. */
  pastes: string[]
}

/** The replay's plan and what it was built from. */
export interface HonestTraffic {
  turns: Turn[]
  corpus: {
    pages: number
    privatePages: number
    answerPages: number
    publicPages: number
    licences: number
    languages: number
    tenants: number
  }
}

/** A span of `count` consecutive units of a text, cut on unit boundaries; undefined when shorter. */
export function spanOf(random: () => number, text: string, count: number): string | undefined {
  const list = units(text)
  if (list.length < count) return undefined
  const start = Math.floor(random() * (list.length - count + 1))
  return text.slice(list[start]!.start, list[start + count - 1]!.end)
}

/** Sentences of a paragraph (a model quoting its prompt quotes whole sentences). */
function sentences(text: string): string[] {
  return text
    .split(/(?<=[.!?。！？])\s*/u)
    .map((s) => s.trim())
    .filter((s) => units(s).length >= 5)
}

/** The ticket template of a helpdesk (the words are the vendor's; the values are the tenant's). */
function ticket(random: () => number, org: string, desk: string, n: number, about: string): string {
  const id = `${org.slice(0, 3).toUpperCase()}-${100_000 + Math.floor(random() * 900_000)}`
  const name = `${pick(random, FIRST)} ${pick(random, LAST)}`
  const account = `${Math.floor(random() * 90_000_000) + 10_000_000}`
  const priority = pick(random, ['low', 'normal', 'high', 'urgent'])
  if (desk === 'HelpdeskPro') {
    return (
      `Ticket ${id} (#${n}) opened by ${name} <${name.toLowerCase().replace(' ', '.')}@${org}.example>\n` +
      `Account: ${account} | Priority: ${priority} | Status: open\n` +
      `Description: ${about}`
    )
  }
  return (
    `[TicketLine] Case ${id} — customer ${name}, account no. ${account}, severity ${priority}.\n` +
    `Customer wrote: ${about}`
  )
}

/**
 * Builds the traffic: `count` honest turns and `controls` control answers among them.
 *
 * @example
 * const { turns } = honestTraffic({ count: 2_000, controls: 40, seed: 45 })
 */
export function honestTraffic(options: {
  count: number
  controls: number
  seed?: number
  /** The UDHR translations in the traffic. @default UDHR_LANGUAGES */
  languages?: readonly Language[]
}): HonestTraffic {
  const seed = options.seed ?? 45
  const random = prng(seed)
  const pages = docPages().filter((p) => p.prose.length + p.code.length > 0)
  const licences = licenceFiles()
  // Pages are dealt by path: the organisations' own documents, the model's knowledge (no tenant sends
  // them), and public pages several tenants or exactly one paste.
  const orgs: Tenant[] = ORGS.map((o, i) => ({
    name: o.name,
    languages: o.languages,
    system: i % 4 === 0 ? DOCBOT_SYSTEM : i % 4 === 1 ? undefined : orgSystem(o.name),
    pages: [],
    desk: o.desk,
    tickets: [],
    pastes: [],
  }))
  const users: Tenant[] = []
  for (let i = 0; i < 200; i++) {
    users.push({
      name: `notely/u${String(i).padStart(3, '0')}`,
      languages: i % 5 === 0 ? [pick(random, UDHR_LANGUAGES)] : [],
      system: NOTELY_SYSTEM,
      pages: [],
      desk: undefined,
      tickets: [],
      pastes: [],
    })
  }
  const answerPages: DocPage[] = []
  const publicPages: DocPage[] = []
  let privatePages = 0
  for (const p of pages) {
    const h = hash(`${seed}:${p.path}`) % 20
    if (h < 10) {
      privatePages++
      const owner = h < 7 ? orgs[hash(p.path) % orgs.length]! : users[hash(p.path) % users.length]!
      owner.pages.push(p)
    } else if (h < 17) answerPages.push(p)
    else publicPages.push(p)
  }
  // Private material is what the model does not otherwise write: a paragraph or code block of an
  // owner's page that shares a sentence's worth of units with the model's pages or the public ones
  // (the docs repeat passages from page to page) is not the owner's alone, and is left out.
  const known = new RunIndex(
    [...answerPages, ...publicPages].flatMap((p) => [...p.prose, ...p.code]),
  )
  for (const owner of [...orgs, ...users]) {
    owner.pages = owner.pages.map((p) => ({
      ...p,
      prose: p.prose.filter((t) => !known.shares(t)),
      code: p.code.filter((t) => !known.shares(t)),
    }))
  }
  // Users without a page of their own keep notes cut from an org-free share of private pages.
  for (const owner of [...orgs, ...users]) {
    owner.pages = owner.pages.filter((p) => p.prose.length + p.code.length > 0)
  }
  const notePool = users.flatMap((u) => u.pages)
  for (const u of users) if (u.pages.length === 0) u.pages.push(pick(random, notePool))
  // The model's own words are not a copy of a public page a tenant pastes: prose and code of its
  // pages that repeat one (the docs repeat passages) are left out, as they are of private pages.
  const pasted = new RunIndex(publicPages.flatMap((p) => [...p.prose, ...p.code]))
  const answerProse = answerPages.flatMap((p) => p.prose).filter((t) => !pasted.shares(t))
  const answerCode = answerPages.flatMap((p) => p.code).filter((t) => !pasted.shares(t))
  // Each stock phrase and each of the commonest code preambles is also in exactly one
  // organisation's prompts (a pasted draft that ends with it, pasted code that opens with it).
  const preambles = commonPreambles(pages)
  Object.values(SIGN_OFFS)
    .flat()
    .forEach((phrase, i) => {
      orgs[(i * 5 + 1) % orgs.length]!.pastes.push(phrase)
    })
  preambles.forEach((head, i) => {
    orgs[(i * 7 + 2) % orgs.length]!.pastes.push(head)
  })
  const recitable = licences
    .map((l) => l.text)
    .filter((t) => t.length < 12_000 && !/bundled|externally maintained|^#|^-{3}|^\/\//im.test(t))
    .filter((t) => (t.match(LICENCE_OPENINGS) ?? []).length <= 1)
  const udhr = new Map(
    [...UDHR_LANGUAGES, ...HELD_OUT_LANGUAGES].map((code) => [code, udhrLines(code)] as const),
  )
  const tenants = [...orgs, ...users]
  const turns: Turn[] = []
  const controlAt = new Set<number>()
  for (let i = 1; i <= options.controls; i++) {
    controlAt.add(Math.floor((i * options.count) / (options.controls + 1)) + 10)
  }
  const senders = new Senders()
  const leakable: { tenant: string; text: string; at: number }[] = []
  const ctx: Context = {
    random,
    answerProse,
    answerCode,
    licences,
    recitable,
    preambles,
    udhr,
    languages: options.languages ?? UDHR_LANGUAGES,
    publicPages,
  }
  let clock = 0
  while (turns.length < options.count + options.controls) {
    // Organisations send most of the traffic; the app's users a third of it.
    const tenant = random() < 0.65 ? pick(random, orgs) : pick(random, users)
    const gapMs = 500 + Math.floor(random() * 3_000)
    clock += gapMs
    let turn = honestTurn(ctx, tenant)
    turn.gapMs = gapMs
    if (controlAt.has(turns.length)) {
      const control = plantControl(ctx, turn, senders, leakable, clock)
      if (control) turn = control
    }
    senders.add(turn)
    if (turn.control === undefined) {
      for (const text of privateTexts(turn)) leakable.push({ tenant: turn.tenant, text, at: clock })
    }
    turns.push(turn)
  }
  return {
    turns,
    corpus: {
      pages: pages.length,
      privatePages,
      answerPages: answerPages.length,
      publicPages: publicPages.length,
      licences: licences.length,
      languages: ctx.languages.length,
      tenants: tenants.length,
    },
  }
}

/** An organisation's own system prompt (private to it). */
function orgSystem(name: string): string {
  return (
    `You are the internal assistant of ${name[0]!.toUpperCase()}${name.slice(1)} Corp. Staff ask you ` +
    `about ${name}'s own engineering documents and customer tickets. Ticket ids look like ` +
    `${name.slice(0, 3).toUpperCase()}-123456. Never send ${name} data outside the company.`
  )
}

interface Context {
  random: () => number
  answerProse: string[]
  answerCode: string[]
  licences: { from: string; text: string }[]
  /** Licences a model writes out: one licence each, not a list of bundled dependencies' licences. */
  recitable: string[]
  /** The commonest openings of the docs' code examples (their imports). */
  preambles: string[]
  udhr: Map<Language, string[]>
  /** The UDHR translations tenants paste and the model recites. */
  languages: readonly Language[]
  publicPages: DocPage[]
}

function opener(c: Context, language: Language | undefined): Segment {
  return { kind: 'opener', text: pick(c.random, OPENERS[language ?? 'eng'] ?? OPENERS.eng!) }
}

function signOff(c: Context, language: Language | undefined): Segment[] {
  if (c.random() < 0.35) return []
  const phrases = (language && SIGN_OFFS[language]) || SIGN_OFFS.eng!
  return [{ kind: 'stock', text: pick(c.random, phrases) }]
}

function modelProse(c: Context, paragraphs: number): Segment[] {
  const at = Math.floor(c.random() * c.answerProse.length)
  return c.answerProse
    .slice(at, at + paragraphs)
    .map((text) => ({ kind: 'model-prose' as const, text }))
}

/** One or two sentences of the tenant's own text, quoted. */
function ownQuotes(c: Context, text: string): Segment[] {
  const list = sentences(text)
  if (list.length === 0) return []
  const out: Segment[] = []
  for (let i = 0; i < 1 + Math.floor(c.random() * 2); i++) {
    out.push({ kind: 'own-quote', text: `“${pick(c.random, list)}”` })
  }
  return out
}

function messagesOf(tenant: Tenant, user: string): Message[] {
  const messages: Message[] = []
  if (tenant.system) messages.push({ role: 'system', content: tenant.system })
  messages.push({ role: 'user', content: user })
  return messages
}

function languageOf(c: Context, tenant: Tenant): Language | undefined {
  return tenant.languages.length > 0 && c.random() < 0.5
    ? pick(c.random, tenant.languages)
    : undefined
}

/** An honest request of `tenant` and the answer the model gives it. */
function honestTurn(c: Context, tenant: Tenant): Turn {
  const r = c.random()
  const stream = c.random() < 0.5
  const language = languageOf(c, tenant)
  const base = { tenant: tenant.name, stream, json: false, gapMs: 0 }
  const page = pick(c.random, tenant.pages)
  let turn: Turn
  if (tenant.last && r < 0.15) {
    // A later turn: the history comes back, and the answer restates what the model said before.
    const earlier = tenant.last
    const said = sentences(earlier.answer)
    const messages: Message[] = [
      ...earlier.messages,
      { role: 'assistant', content: earlier.answer },
      {
        role: 'user',
        content: pick(c.random, [
          'Thanks. Can you shorten that?',
          'Go on.',
          'And the second point?',
        ]),
      },
    ]
    turn = {
      ...base,
      inputs: { messages },
      label: 'follow-up',
      reasoning: 'The user wants a follow-up on my previous answer.',
      content: [
        { kind: 'history', text: `As I said: ${said.slice(0, 3).join(' ')}` },
        ...modelProse(c, 1),
        ...signOff(c, language),
      ],
    }
  } else if (r >= 0.94 && tenant.pastes.length > 0 && page.prose.length > 0) {
    // Something only this tenant pastes: a draft of its own that ends with a stock phrase, or its
    // code under a common preamble.
    const paste = pick(c.random, tenant.pastes)
    const own = pick(c.random, page.prose)
    const code = /[;{}()]/.test(paste)
    const user = code
      ? `${pick(c.random, CODE_QUESTIONS)}\n\`\`\`ts\n${paste}\n${page.code[0] ?? own}\n\`\`\``
      : `Improve this draft reply to a customer:\n${own}\n\n${paste}`
    turn = {
      ...base,
      inputs: { messages: messagesOf(tenant, user) },
      material: own,
      label: 'draft with a stock phrase or code preamble only it pastes',
      reasoning: 'The user wants their text improved.',
      content: [
        opener(c, language),
        ...ownQuotes(c, own),
        ...modelProse(c, 1),
        ...signOff(c, language),
      ],
    }
  } else if (tenant.desk && r < 0.3) {
    turn = ticketTurn(c, tenant, base, page)
  } else if (r < 0.42 && page.code.length > 0) {
    // Code: the tenant's code, and an answer in real example code (its imports are everyone's).
    const code = pick(c.random, page.code)
    const user = `${pick(c.random, CODE_QUESTIONS)}\n\`\`\`ts\n${code}\n\`\`\``
    turn = {
      ...base,
      inputs: { messages: messagesOf(tenant, user) },
      material: code,
      label: 'code',
      reasoning: 'The user wants their code reviewed.',
      content: [
        opener(c, undefined),
        {
          kind: 'code',
          text: `\`\`\`ts\n${c.random() < 0.6 ? `${pick(c.random, c.preambles)}\n` : ''}${pick(c.random, c.answerCode)}\n\`\`\``,
        },
        ...modelProse(c, c.random() < 0.5 ? 1 : 0),
        ...signOff(c, undefined),
      ],
    }
  } else if (r < 0.52) {
    // The UDHR: the tenant pastes an article in its language; the model recites another from memory.
    const lang = language ?? pick(c.random, UDHR_LANGUAGES)
    // The translation: the tenant's language, or (in a replay of other translations) its stand-in.
    const index = UDHR_LANGUAGES.indexOf(lang as (typeof UDHR_LANGUAGES)[number])
    const lines = c.udhr.get(c.languages[Math.max(0, index) % c.languages.length]!)!
    const at = Math.floor(c.random() * lines.length)
    const pasted = lines.slice(at, at + 1 + Math.floor(c.random() * 3)).join('\n')
    const recited = pick(c.random, lines)
    turn = {
      ...base,
      inputs: { messages: messagesOf(tenant, `${pick(c.random, QUESTIONS)}\n${pasted}`) },
      label: 'UDHR',
      reasoning: 'The user asks about a passage of the Universal Declaration of Human Rights.',
      content: [
        opener(c, lang),
        ...ownQuotes(c, pasted),
        { kind: 'udhr', text: recited },
        ...signOff(c, lang),
      ],
    }
  } else if (r < 0.57) {
    // A licence: written from memory, or one the tenant pastes ("is this compatible?").
    const licence = pick(c.random, c.licences).text
    const paste = c.random() < 0.4
    const user = paste
      ? `Is this licence compatible with commercial use?\n${licence}`
      : `Write me a ${pick(c.random, ['MIT', 'ISC', 'Apache-2.0', 'BSD'])} licence for my project.`
    // Written for the user's project: one licence's text (never a package's list of its bundled
    // dependencies' licences), with the user's copyright line in place of the package's.
    const recited = pick(c.random, c.recitable).replace(
      /^[ \t]*(copyright[ \t]*(\(c\)|©|\d{4})|©).*(\r?\n[ \t]*(copyright[ \t]*(\(c\)|©|\d{4})|©).*)*/gim,
      'Copyright (c) 2026 Your Name',
    )
    turn = {
      ...base,
      inputs: { messages: messagesOf(tenant, user) },
      label: 'licence',
      reasoning: 'The user asks about a software licence.',
      content: [opener(c, undefined), { kind: 'licence', text: recited }, ...signOff(c, undefined)],
    }
  } else if (r < 0.65) {
    // A public page: several tenants paste the same ones; the model also quotes what it knows.
    const pub = pick(c.random, c.publicPages)
    const text = pub.prose.slice(0, 4).join('\n\n') || pub.code[0] || ''
    turn = {
      ...base,
      inputs: { messages: messagesOf(tenant, `${pick(c.random, QUESTIONS)}\n${text}`) },
      label: 'public page',
      reasoning: 'The user pasted a page of public documentation.',
      content: [
        opener(c, undefined),
        ...ownQuotes(c, text).map((q) => ({ ...q, kind: 'public-doc' as const })),
        ...modelProse(c, 1),
        ...signOff(c, undefined),
      ],
    }
  } else if (r < 0.72 && tenant.desk === undefined) {
    // The app's JSON mode: its notes, extracted.
    const note = pick(c.random, page.prose.length > 0 ? page.prose : [NOTELY_SYSTEM])
    turn = {
      ...base,
      json: true,
      inputs: {
        messages: messagesOf(
          tenant,
          `Extract the title and the main point of this note as JSON:\n${note}`,
        ),
        response_format: { type: 'json_object' },
      },
      material: note,
      label: 'JSON mode',
      reasoning: 'Return JSON with title and point.',
      content: [
        {
          kind: 'own-quote',
          text: JSON.stringify({
            title: sentences(note)[0] ?? note.slice(0, 80),
            point: note.slice(0, 400),
          }).slice(1),
        },
      ],
    }
  } else {
    // The commonest request: the tenant's own document, summarised and quoted.
    const at = Math.floor(c.random() * Math.max(1, page.prose.length))
    const doc = page.prose.slice(at, at + 1 + Math.floor(c.random() * 4)).join('\n\n')
    const text = doc || pick(c.random, page.code)
    turn = {
      ...base,
      inputs: { messages: messagesOf(tenant, `${pick(c.random, QUESTIONS)}\n${text}`) },
      material: text,
      label: 'own document',
      reasoning: `The user asks: ${QUESTIONS[0]}`,
      content: [
        opener(c, language),
        ...ownQuotes(c, text),
        ...(tenant.desk === undefined && c.random() < 0.3
          ? [
              {
                kind: 'system' as const,
                text: 'As your note-taking assistant, I only use the notes you give me.',
              },
            ]
          : []),
        ...modelProse(c, 1 + Math.floor(c.random() * 2)),
        ...signOff(c, language),
      ],
    }
  }
  const messages = turn.inputs.messages as Message[]
  tenant.last = { messages: messages.slice(-2), answer: answerText(turn) }
  return turn
}

/**
 * A helpdesk ticket: the model files it with a tool call (whose arguments restate the ticket); the
 * next request resends that call and its result, and the answer restates the arguments.
 */
function ticketTurn(
  c: Context,
  tenant: Tenant,
  base: Pick<Turn, 'tenant' | 'stream' | 'json' | 'gapMs'>,
  page: DocPage,
): Turn {
  const about = pick(c.random, page.prose.length > 0 ? page.prose : page.code).slice(0, 500)
  const text = ticket(c.random, tenant.name, tenant.desk!, tenant.tickets.length + 1, about)
  tenant.tickets.push(text)
  const args = JSON.stringify({ summary: sentences(about)[0] ?? about.slice(0, 120), body: text })
  const user = `File this ticket in the tracker:\n${text}`
  const messages = messagesOf(tenant, user)
  if (c.random() < 0.5) {
    return {
      ...base,
      inputs: { messages, tools: [TRACKER_TOOL] },
      material: text,
      label: 'ticket, tool call',
      reasoning: 'I will file the ticket with the tracker tool.',
      content: [],
      tool: { name: 'file_ticket', arguments: args },
    }
  }
  const followUp: Message[] = [
    ...messages,
    {
      role: 'assistant',
      content: '',
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'file_ticket', arguments: args } },
      ],
    },
    { role: 'tool', tool_call_id: 'call_1', content: '{"ok":true}' },
  ]
  return {
    ...base,
    inputs: { messages: followUp, tools: [TRACKER_TOOL] },
    material: text,
    label: 'ticket, arguments restated',
    reasoning: 'The ticket was filed; tell the user what was saved.',
    content: [
      { kind: 'opener', text: 'Done! I have filed the ticket with these details:' },
      { kind: 'tool-args', text: args },
      ...signOff(c, undefined),
    ],
  }
}

const TRACKER_TOOL = {
  type: 'function',
  function: {
    name: 'file_ticket',
    description: 'Files a ticket in the tracker.',
    parameters: {
      type: 'object',
      properties: { summary: { type: 'string' }, body: { type: 'string' } },
      required: ['summary', 'body'],
    },
  },
}

/**
 * The commonest first three lines of the docs' code examples (the imports most examples share), as
 * real code opens: mined by counting, the eight that open three examples or more.
 */
function commonPreambles(pages: readonly DocPage[]): string[] {
  const counts = new Map<string, number>()
  for (const page of pages) {
    for (const code of page.code) {
      const head = code
        .split('\n')
        .filter((l) => l.trim().length > 0)
        .slice(0, 3)
        .join('\n')
      if (units(head).length >= 8) counts.set(head, (counts.get(head) ?? 0) + 1)
    }
  }
  return [...counts.entries()]
    .filter(([, n]) => n >= 3)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, 8)
    .map(([head]) => head)
}

/** The answer's visible text (content segments joined), as the scripted model writes it. */
export function answerText(turn: Turn): string {
  return turn.content.map((s) => s.text).join('\n\n')
}

/** Texts of a turn that are its tenant's alone to be quoted by a control: its private material. */
function privateTexts(turn: Turn): string[] {
  return turn.material !== undefined && units(turn.material).length >= 40 ? [turn.material] : []
}

/** Units of a text, lower-cased, without its import lines (every example's imports are alike). */
function plainUnits(text: string): string[] {
  return lowerUnits(text.replace(/^\s*(import|export \{|from) .*$/gm, ''))
}

/** Units of a text, lower-cased. */
function lowerUnits(text: string): string[] {
  return units(text).map((u) => u.text.toLowerCase())
}

/** The runs of `size` consecutive units of a list, as strings. */
function windows(list: readonly string[], size: number): string[] {
  const out: string[] = []
  for (let i = 0; i + size <= list.length; i++) out.push(list.slice(i, i + size).join(' '))
  return out
}

/** Runs of 12 units (a sentence's worth) of a set of texts, to tell whether another repeats one. */
class RunIndex {
  readonly #runs: Set<string>

  constructor(texts: readonly string[]) {
    this.#runs = new Set(texts.flatMap((text) => windows(plainUnits(text), 12)))
  }

  shares(text: string): boolean {
    return windows(plainUnits(text), 12).some((run) => this.#runs.has(run))
  }
}

/**
 * Who sent each 7-unit shingle so far ('*' once two tenants did): a control quotes only text none of
 * whose shingles anyone but its tenant sent.
 */
class Senders {
  readonly #by = new Map<string, string>()

  add(turn: Turn): void {
    for (const m of turn.inputs.messages as Message[]) {
      const content = typeof m.content === 'string' ? m.content : ''
      for (const text of [content, JSON.stringify(m.tool_calls ?? '')]) {
        for (const s of windows(lowerUnits(text), 7)) {
          const held = this.#by.get(s)
          this.#by.set(s, held === undefined || held === turn.tenant ? turn.tenant : '*')
        }
      }
    }
  }

  private(text: string, tenant: string): boolean {
    return windows(lowerUnits(text), 7).every((s) => this.#by.get(s) === tenant)
  }
}

/**
 * A control: the honest turn's answer with 30–80 units of another tenant's private text (sent in the
 * last half hour) placed among its own words. Undefined when no private text fits.
 */
function plantControl(
  c: Context,
  turn: Turn,
  senders: Senders,
  leakable: readonly { tenant: string; text: string; at: number }[],
  now: number,
): Turn | undefined {
  if (turn.json || turn.tool) return undefined
  for (let tries = 0; tries < 300; tries++) {
    const source = leakable[Math.floor(c.random() * leakable.length)]
    if (!source || source.tenant === turn.tenant || now - source.at > 30 * 60_000) continue
    const quote = spanOf(c.random, source.text, pick(c.random, [30, 34, 40, 50, 64, 80]))
    if (quote === undefined || !senders.private(quote, source.tenant)) continue
    const content = [...turn.content]
    content.splice(Math.min(1, content.length), 0, { kind: 'leak', text: quote })
    return { ...turn, content, control: { source: source.tenant, quote } }
  }
  return undefined
}
