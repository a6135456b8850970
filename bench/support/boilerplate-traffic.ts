/**
 * @module Honest multi-tenant chat traffic where tenants share boilerplate (licences, public READMEs,
 * one app's system prompt) beside their own private prose: conversations of one to five turns whose
 * assistant turns are the answers the client received, histories trimmed by the client, answers
 * pasted back into a new chat. Each shared text has a first sender who uses it alone for a while
 * before the other tenants start sending it.
 */
import { rng } from '../texts'
import {
  APP_SYSTEM_PROMPT,
  ownCopyright,
  privateProse,
  type SharedText,
  tenantMarker,
} from './tenant-texts'

/** Why a request looks the way it does. */
export type Kind =
  | 'first turn'
  | 'follow-up'
  | 'trimmed history'
  | 'pasted answer'
  | 'resumed after an hour'

/** A piece of a message and what it is (a shared text's name, or `private`, `question` …). */
export interface Part {
  label: string
  text: string
}

interface Turn {
  user: Part[]
  assistant?: string
}

interface Conversation {
  tenant: Tenant
  system: Part | undefined
  turns: Turn[]
  planned: number
  /** From the third turn on, the client drops the first user turn (keeps the answers). */
  trims: boolean
  /** Parked after its last turn, resumed (history trimmed) more than an hour later. */
  resumed: boolean
}

/** A tenant of the gateway. */
export interface Tenant {
  name: string
  marker: string
  usesApp: boolean
  /** Its last released answers (content), for pasting. */
  answers: string[]
  /** Its recent private documents, re-sent now and then. */
  docs: string[]
}

/** One planned request. */
export interface Planned {
  tenant: Tenant
  kind: Kind
  messages: { role: string; content: string }[]
  /** Every part of every message the tenant sends (system, user turns), labelled. */
  parts: Part[]
  /** Shared texts in this prompt. */
  shared: string[]
  stream: boolean
  conversation: Conversation
}

/** When the other tenants start sending each shared text (share of the run), and how often. */
const OPENING: Record<string, { at: number; rate: number }> = {
  'MIT licence': { at: 0.08, rate: 0.15 },
  'Apache-2.0 licence': { at: 0.2, rate: 0.1 },
  'Zod README': { at: 0.35, rate: 0.12 },
  // A rarely sent public text: within an hour, few tenants send it.
  'Hono README': { at: 0.5, rate: 0.02 },
  'app system prompt': { at: 0.12, rate: 1 },
}
/** A parked conversation resumes after the fingerprints' one-hour ttl (and some). */
const RESUME_AFTER_MS = 65 * 60_000
const TOPICS = ['the terms', 'the totals', 'the risks', 'the next steps', 'the dates', 'the owner']

/**
 * Plans requests one at a time, in an order that depends only on the seed (and on the answers fed
 * back with {@link TrafficPlan.answered}).
 *
 * @example
 * const plan = new TrafficPlan(shared, 120, 4_000, 1)
 * const next = plan.next(0)
 * plan.answered(next, content)
 */
export class TrafficPlan {
  private readonly rand: () => number
  private readonly tenants: Tenant[]
  private readonly active: Conversation[] = []
  private readonly first = new Map<string, Tenant>()
  private readonly parked: { conversation: Conversation; at: number }[] = []
  private seeds = 0

  constructor(
    private readonly shared: SharedText[],
    tenants: number,
    private readonly total: number,
    seed: number,
  ) {
    this.rand = rng(seed)
    this.tenants = Array.from({ length: tenants }, (_, i) => ({
      name: `tenant-${String(i).padStart(3, '0')}`,
      marker: tenantMarker(10_000 + i),
      usesApp: this.rand() < 0.6,
      answers: [],
      docs: [],
    }))
    // Each shared text's first sender: a tenant that sends it alone until the text opens.
    for (const [i, text] of shared.entries()) {
      const candidates = this.tenants.filter((t) => text.text !== APP_SYSTEM_PROMPT || t.usesApp)
      this.first.set(text.name, candidates[(i * 37 + 11) % candidates.length]!)
    }
  }

  /** The tenant who sends `name` first. */
  firstSender(name: string): string {
    return this.first.get(name)?.name ?? '—'
  }

  /**
   * The next request; `index` is its place in the run (shared texts open by it), `now` the clock (a
   * parked conversation resumes once an hour and five minutes have passed).
   */
  next(index: number, now: number): Planned {
    const due = this.parked.findIndex((p) => now - p.at >= RESUME_AFTER_MS)
    if (due >= 0) {
      const { conversation } = this.parked.splice(due, 1)[0]!
      conversation.resumed = true
      conversation.planned = conversation.turns.length + 1
      this.active.push(conversation)
      return this.build(conversation, index)
    }
    const continuing = this.active.length > 0 && (this.rand() < 0.55 || this.active.length > 200)
    const conversation = continuing
      ? this.active[Math.floor(this.rand() * this.active.length)]!
      : this.start(index)
    if (!continuing) this.active.push(conversation)
    return this.build(conversation, index)
  }

  /** Feeds back what the client received (content; empty when withheld) at `now`. */
  answered(planned: Planned, content: string, now: number): void {
    const { conversation } = planned
    const turn = conversation.turns.at(-1)!
    turn.assistant = content
    if (content !== '') {
      planned.tenant.answers.push(content)
      if (planned.tenant.answers.length > 4) planned.tenant.answers.shift()
    }
    if (conversation.turns.length >= conversation.planned) {
      this.active.splice(this.active.indexOf(conversation), 1)
      const parks = !conversation.resumed && conversation.turns.length >= 2 && this.rand() < 0.15
      if (parks) this.parked.push({ conversation, at: now })
    }
  }

  private isOpen(name: string, index: number): boolean {
    return index >= (OPENING[name]?.at ?? 0) * this.total
  }

  private start(index: number): Conversation {
    // Before a shared text opens, its first sender is busier than most: it sends the text alone.
    const closed = this.shared.filter((s) => !this.isOpen(s.name, index))
    const pick = closed[Math.floor(this.rand() * closed.length)]
    const tenant =
      pick && this.rand() < 0.1
        ? this.first.get(pick.name)!
        : this.tenants[Math.floor(this.rand() * this.tenants.length)]!
    const app = this.shared.find((s) => s.text === APP_SYSTEM_PROMPT)
    const appOpen =
      app !== undefined && (this.isOpen(app.name, index) || this.first.get(app.name) === tenant)
    const system: Part | undefined =
      tenant.usesApp && appOpen && app
        ? { label: app.name, text: app.text }
        : this.rand() < 0.5
          ? {
              label: 'own system prompt',
              text: `You help ${tenant.name}. ${this.prose(tenant, 200)}`,
            }
          : undefined
    const r = this.rand()
    const planned = r < 0.4 ? 1 : r < 0.65 ? 2 : r < 0.85 ? 3 : 4 + Math.floor(this.rand() * 2)
    const trims = planned >= 3 && this.rand() < 0.4
    return { tenant, system, turns: [], planned, trims, resumed: false }
  }

  private prose(tenant: Tenant, chars: number): string {
    return privateProse(1_000_000 + this.seeds++, chars, tenant.marker)
  }

  private question(tenant: Tenant): Part {
    const topic = TOPICS[Math.floor(this.rand() * TOPICS.length)]
    return { label: 'question', text: `${tenant.name} asks: what does this say about ${topic}?` }
  }

  /** The user parts of a conversation's first turn: shared texts, private prose or a pasted answer. */
  private firstTurn(c: Conversation, index: number): { parts: Part[]; kind: Kind } {
    const { tenant } = c
    if (tenant.answers.length > 0 && this.rand() < 0.06) {
      const pasted = tenant.answers[Math.floor(this.rand() * tenant.answers.length)]!
      const parts = [{ label: 'pasted answer', text: `Earlier you told me this:\n${pasted}` }]
      return { parts: [...parts, this.question(tenant)], kind: 'pasted answer' }
    }
    const parts: Part[] = []
    for (const s of this.shared) {
      if (s.text === APP_SYSTEM_PROMPT) continue
      const opening = OPENING[s.name] ?? { at: 0, rate: 0.1 }
      const first = this.first.get(s.name) === tenant
      const p = this.isOpen(s.name, index) ? opening.rate : first ? 0.6 : 0
      if (this.rand() >= p) continue
      const text =
        s.name === 'MIT licence'
          ? ownCopyright(s.text, `${tenant.name} contributors`, 2024)
          : s.text
      parts.push({ label: s.name, text })
    }
    let doc: string
    if (tenant.docs.length > 0 && this.rand() < 0.3) {
      doc = tenant.docs[Math.floor(this.rand() * tenant.docs.length)]!
    } else {
      doc = this.prose(tenant, 600 + Math.floor(this.rand() * 5_400))
      tenant.docs.push(doc)
      if (tenant.docs.length > 3) tenant.docs.shift()
    }
    parts.push({ label: 'private', text: doc }, this.question(tenant))
    return { parts, kind: 'first turn' }
  }

  private build(c: Conversation, index: number): Planned {
    let kind: Kind
    let user: Part[]
    if (c.turns.length === 0) ({ parts: user, kind } = this.firstTurn(c, index))
    else {
      user = [{ label: 'private', text: this.prose(c.tenant, 200 + Math.floor(this.rand() * 600)) }]
      user.push(this.question(c.tenant))
      kind = c.resumed
        ? 'resumed after an hour'
        : c.trims && c.turns.length >= 2
          ? 'trimmed history'
          : 'follow-up'
    }
    c.turns.push({ user })
    const messages: { role: string; content: string }[] = []
    const parts: Part[] = []
    if (c.system) {
      messages.push({ role: 'system', content: c.system.text })
      parts.push(c.system)
    }
    for (const [i, turn] of c.turns.entries()) {
      // A trimming client drops the first user turn and keeps the answers that quote it.
      const dropped = (kind === 'trimmed history' || kind === 'resumed after an hour') && i === 0
      if (!dropped) {
        messages.push({ role: 'user', content: turn.user.map((p) => p.text).join('\n\n') })
        parts.push(...turn.user)
      }
      // A withheld answer leaves no assistant turn (the client got an error, not text).
      if (turn.assistant) messages.push({ role: 'assistant', content: turn.assistant })
    }
    const shared = parts
      .filter((p) => this.shared.some((s) => s.name === p.label))
      .map((p) => p.label)
    return {
      tenant: c.tenant,
      kind,
      messages,
      parts,
      shared,
      stream: this.rand() < 0.5,
      conversation: c,
    }
  }
}
