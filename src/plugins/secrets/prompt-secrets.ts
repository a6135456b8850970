/**
 * @module Secrets out of the prompt: every text the engine will read — system, user, assistant and
 * tool turns, content parts, a legacy `prompt`, tool-call arguments inside their JSON — has each secret
 * its model's policy substitutes replaced by a stand-in of this request (src/plugins/secrets), before the
 * canary is injected and before the ceiling counts what is sent. Kinds whose policy is `detect` are
 * counted and left as they are.
 *
 * The book that holds the values lives as long as the request: the release stage restores from it.
 */
import { GuardError, type MemoSlot, memoSlot, type RequestMemo, type TextFacts } from '../../core'
import { findSecrets } from './detector'
import type { ResolvedSecrets } from './policy'
import type { StandInBook } from './stand-in-book'
import { StandInBook as Book, MAX_STAND_INS } from './stand-in-book'
import type { StandInKey } from './stand-in-codec'

/** Kinds with counts (never values). */
type KindCounts = Record<string, number>

/** A request's secrets, as substitution left them (the plug-in's face builds the core's from it). */
export interface SubstitutedSecrets {
  /** This request's stand-ins and their values; also recognises any other request's stand-ins. */
  book: StandInBook
  /** Secrets replaced by stand-ins, per kind. */
  substituted: KindCounts
  /** Secrets found by `detect` kinds and sent as they were, per kind. */
  detected: KindCounts
  /**
   * Whether `text` occurs in a text of the prompt as sent. A stand-in of another request that the
   * prompt itself carries is no proof of a leak: a client can learn one of its own stand-ins (ask the
   * model to reverse it, reverse it back) and plant it in a page another tenant's prompt quotes —
   * without this, its answer would be quarantined. Read only when a foreign stand-in is found.
   */
  inPrompt(text: string): boolean
}

/** What substitution needs of the guard. */
export interface SecretServices {
  readonly secrets: ResolvedSecrets | undefined
  standInKey(): Promise<StandInKey>
}

/** Per model policy: the slot of texts it found nothing in (see {@link substituteSecrets}). */
const CLEAN = new WeakMap<object, MemoSlot<true>>()

/**
 * The inputs with every substituted secret replaced (the same object when nothing changed), and what
 * was found. Undefined secrets: the guard substitutes nothing for any model, so no answer can carry a
 * stand-in and there is nothing to do. With the request's `memo`, a long text this tenant sent before
 * in which the model's policy found nothing is not scanned again (what the detectors find is a pure
 * function of the text; a text with a secret is never remembered, so it is scanned every time).
 *
 * @example
 * const { inputs, secrets } = await substituteSecrets(guard, { requestId, tenant, model }, facts.inputs)
 */
export async function substituteSecrets(
  services: SecretServices,
  request: { requestId: string; tenant: string; model: string },
  inputs: Record<string, unknown>,
  memo?: RequestMemo,
): Promise<{ inputs: Record<string, unknown>; secrets: SubstitutedSecrets | undefined }> {
  const resolved = services.secrets
  if (!resolved) return { inputs, secrets: undefined }
  const policy = resolved.forModel(request.model)
  const { substitute, detect } = policy
  if (!resolved.substitutes && detect.length === 0) return { inputs, secrets: undefined }
  const clean = memo && (await cleanTexts(memo, policy, inputs))
  const book = await Book.open(
    await services.standInKey(),
    { requestId: request.requestId, tenant: request.tenant },
    substitute,
    resolved.all,
  )
  const secrets: SubstitutedSecrets = {
    book,
    substituted: {},
    detected: {},
    inPrompt: (text) => sentTexts(sent).some((t) => t.includes(text)),
  }
  const rewrite: Rewrite = async (text, count = COUNT_ALL) => {
    if (clean?.get(text)) return text
    let found = 0
    if (count.detected && detect.length > 0) {
      for (const span of findSecrets(text, detect)) {
        bump(secrets.detected, span.kind)
        found++
      }
    }
    // Nothing found by a pass that looked with every detector of the policy: remembered as clean.
    const nothing = (out: string) =>
      found === 0 && out === text && (count.detected || detect.length === 0)
    if (substitute.length === 0) {
      if (nothing(text)) clean?.keep(text, true, 8)
      return text
    }
    const done = await book.substitute(text)
    found += done.replaced.length + done.unsubstituted.length
    if (nothing(done.text)) clean?.keep(text, true, 8)
    if (count.substituted) {
      for (const { kind, count } of done.replaced) bump(secrets.substituted, kind, count)
    }
    const left = done.unsubstituted[0]
    if (left) {
      // Sending it would be weaker than the operator asked: refused, nothing sent.
      throw new GuardError(
        'invalid_request',
        `The prompt holds a secret of kind "${left.kind}" that the guard could not replace by a stand-in (a match too short to carry one, or more than ${MAX_STAND_INS} distinct secrets in one request), so it was not sent. Remove it from the prompt, or ask the operator to set this kind to "detect".`,
        { param: 'messages' },
      )
    }
    return done.text
  }
  const sent = await rewriteInputs(inputs, rewrite)
  return { inputs: sent, secrets }
}

/** The long texts the policy found nothing in before, once their digests are known. */
async function cleanTexts(
  memo: RequestMemo,
  policy: object,
  inputs: Record<string, unknown>,
): Promise<TextFacts<true>> {
  await memo.know(messageTexts(inputs))
  let slot = CLEAN.get(policy)
  if (!slot) {
    slot = memoSlot<true>('secrets: none found')
    CLEAN.set(policy, slot)
  }
  return memo.facts(slot)
}

/** The whole strings a rewrite reads as they are: contents, their parts' text, reasoning, `prompt`. */
function messageTexts(inputs: Record<string, unknown>): string[] {
  const texts: string[] = []
  if (typeof inputs.prompt === 'string') texts.push(inputs.prompt)
  if (!Array.isArray(inputs.messages)) return texts
  for (const message of inputs.messages as unknown[]) {
    if (!isRecord(message)) continue
    const { content } = message
    if (typeof content === 'string') texts.push(content)
    else if (Array.isArray(content)) {
      for (const part of content as unknown[]) {
        if (isRecord(part) && typeof part.text === 'string') texts.push(part.text)
      }
    }
    for (const key of ['reasoning_content', 'reasoning'] as const) {
      const value = message[key]
      if (typeof value === 'string') texts.push(value)
    }
  }
  return texts
}

/** Every string of the messages (any field, any depth) and the `prompt`: what the engine may read. */
function sentTexts(inputs: Record<string, unknown>): string[] {
  const texts: string[] = []
  const stack: unknown[] = [inputs.messages, inputs.prompt]
  while (stack.length > 0) {
    const node = stack.pop()
    if (typeof node === 'string') texts.push(node)
    else if (node !== null && typeof node === 'object') stack.push(...Object.values(node))
  }
  return texts
}

function bump(counts: KindCounts, kind: string, by = 1): void {
  counts[kind] = (counts[kind] ?? 0) + by
}

/** Which findings a rewrite counts (a second pass over the same text must not count them twice). */
interface Counting {
  detected: boolean
  substituted: boolean
}

const COUNT_ALL: Counting = { detected: true, substituted: true }

/** The text with its secrets substituted (and `detect` kinds counted). */
type Rewrite = (text: string, count?: Counting) => Promise<string>

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}

/** Every prompt text of the inputs rewritten; objects copied only where something changed. */
async function rewriteInputs(
  inputs: Record<string, unknown>,
  rewrite: Rewrite,
): Promise<Record<string, unknown>> {
  let out = inputs
  if (Array.isArray(inputs.messages)) {
    const messages = await mapChanged(inputs.messages as unknown[], (m) =>
      rewriteMessage(m, rewrite),
    )
    if (messages !== inputs.messages) out = { ...out, messages }
  }
  if (typeof inputs.prompt === 'string') {
    const prompt = await rewrite(inputs.prompt)
    if (prompt !== inputs.prompt) out = { ...out, prompt }
  }
  return out
}

async function rewriteMessage(message: unknown, rewrite: Rewrite): Promise<unknown> {
  if (!isRecord(message)) return message
  let out = message
  const set = (key: string, value: unknown) => {
    if (value !== message[key]) out = { ...out, [key]: value }
  }
  const { content } = message
  if (typeof content === 'string') set('content', await rewrite(content))
  else if (Array.isArray(content)) {
    set(
      'content',
      await mapChanged(content as unknown[], async (part) => {
        if (!isRecord(part) || typeof part.text !== 'string') return part
        const text = await rewrite(part.text)
        return text === part.text ? part : { ...part, text }
      }),
    )
  }
  // Reasoning a client sends back: some templates render it (the ceiling counts it too).
  for (const key of ['reasoning_content', 'reasoning'] as const) {
    const value = message[key]
    if (typeof value === 'string') set(key, await rewrite(value))
  }
  // Calls in any shape ({ function: { name, arguments } }, { name, arguments }, a legacy
  // function_call): every string in them, arguments inside their JSON.
  for (const key of ['tool_calls', 'function_call'] as const) {
    const value = message[key]
    if (value !== undefined && value !== null) set(key, await rewriteCall(value, rewrite))
  }
  return out
}

/**
 * Every string of a call rewritten, keys included; an `arguments` string inside its JSON when it
 * parses (escapes respected, encoded again only if something changed), else as text.
 */
async function rewriteCall(value: unknown, rewrite: Rewrite): Promise<unknown> {
  if (Array.isArray(value)) return mapChanged(value, (v) => rewriteCall(v, rewrite))
  if (!isRecord(value)) return rewriteJson(value, rewrite)
  let changed = false
  const out: [string, unknown][] = []
  for (const [key, item] of Object.entries(value)) {
    const rewritten =
      key === 'arguments' && typeof item === 'string'
        ? await rewriteArguments(item, rewrite)
        : await rewriteCall(item, rewrite)
    // Keys too (arguments given as an object may use a token as a key).
    const name = await rewrite(key)
    if (rewritten !== item || name !== key) changed = true
    out.push([name, rewritten])
  }
  // Built with fromEntries: a "__proto__" key stays a key, never a prototype.
  return changed ? Object.fromEntries(out) : value
}

/** A string of arguments: inside its JSON when it parses and nests sanely, else as text. */
async function rewriteArguments(args: string, rewrite: Rewrite): Promise<string> {
  let parsed: unknown
  try {
    parsed = JSON.parse(args)
  } catch {
    return rewrite(args)
  }
  if (depthOf(parsed) > MAX_JSON_DEPTH) return rewrite(args)
  // The text as written first: numbers (a card as a JSON number), both of two duplicate keys, big
  // integers and the formatting stay exactly as they were; stand-ins need no escaping.
  const raw = await rewrite(args)
  let decoded: unknown
  try {
    decoded = JSON.parse(raw)
  } catch {
    // A substitution broke the JSON (a secret across an escape): substitute the decoded strings of
    // the original instead (its secrets were counted by the first pass).
    const value = await rewriteJson(parsed, rewrite, { detected: false, substituted: false })
    return JSON.stringify(value)
  }
  // Then its strings decoded: a secret that only escapes hid from the raw text (`\u0073k-…`). They
  // hold the stand-ins the first pass issued; the book takes no stand-in of its own, nor any part of
  // one, as a secret again (an IBAN's stand-in holding a card-like run stays whole), so this pass
  // only ever replaces original text and restoration is one level deep.
  const value = await rewriteJson(decoded, rewrite, { detected: false, substituted: true })
  return value === decoded ? raw : JSON.stringify(value)
}

/**
 * Arguments nested deeper than this are rewritten as text (the request reader caps the request's own
 * nesting at 64; a string of arguments is not part of it).
 */
const MAX_JSON_DEPTH = 64

/** How deep a parsed JSON value nests, counted without recursion; stops past the limit. */
function depthOf(value: unknown): number {
  let deepest = 0
  const stack: [unknown, number][] = [[value, 1]]
  while (stack.length > 0 && deepest <= MAX_JSON_DEPTH) {
    const [node, depth] = stack.pop()!
    if (node === null || typeof node !== 'object') continue
    deepest = Math.max(deepest, depth)
    for (const child of Object.values(node)) stack.push([child, depth + 1])
  }
  return deepest
}

/** Every string value of a JSON value rewritten (keys kept), copied only where something changed. */
async function rewriteJson(
  value: unknown,
  rewrite: Rewrite,
  count: Counting = COUNT_ALL,
): Promise<unknown> {
  if (typeof value === 'string') return rewrite(value, count)
  if (Array.isArray(value)) return mapChanged(value, (v) => rewriteJson(v, rewrite, count))
  if (!isRecord(value)) return value
  // Keys too: a token used as a map key reaches the engine like any value.
  const entries = Object.entries(value)
  let changed = false
  const out: [string, unknown][] = []
  for (const [key, item] of entries) {
    const [k, v] = [await rewrite(key, count), await rewriteJson(item, rewrite, count)]
    if (k !== key || v !== item) changed = true
    out.push([k, v])
  }
  // Built with fromEntries: a "__proto__" key of parsed JSON stays a key, never a prototype.
  return changed ? Object.fromEntries(out) : value
}

/** `list` mapped in order; the same array when no item changed. */
async function mapChanged(
  list: unknown[],
  map: (item: unknown) => Promise<unknown>,
): Promise<unknown[]> {
  let out: unknown[] | undefined
  for (let i = 0; i < list.length; i++) {
    const next = await map(list[i])
    if (next !== list[i]) {
      out ??= [...list]
      out[i] = next
    }
  }
  return out ?? list
}
