/**
 * @module Secrets out of the prompt: every text the engine will read — system, user, assistant and
 * tool turns, content parts, a legacy `prompt`, tool-call arguments inside their JSON — has each secret
 * its model's policy substitutes replaced by a stand-in of this request (src/secrets), before the
 * canary is injected and before the ceiling counts what is sent. Kinds whose policy is `detect` are
 * counted and left as they are.
 *
 * The book that holds the values lives as long as the request: the release stage restores from it.
 */
import { GuardError } from '../errors'
import type { ResolvedSecrets, StandInBook, StandInKey } from '../secrets'
import { StandInBook as Book, findSecrets, MAX_STAND_INS } from '../secrets'

/** Kinds with counts (never values). */
export type KindCounts = Record<string, number>

/** What the prompt's secrets came to, for the release stage and the verdict log. */
export interface PromptSecrets {
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

/**
 * The inputs with every substituted secret replaced (the same object when nothing changed), and what
 * was found. Undefined secrets: the guard substitutes nothing for any model, so no answer can carry a
 * stand-in and there is nothing to do.
 *
 * @example
 * const { inputs, secrets } = await substituteSecrets(guard, { requestId, tenant, model }, facts.inputs)
 */
export async function substituteSecrets(
  services: SecretServices,
  request: { requestId: string; tenant: string; model: string },
  inputs: Record<string, unknown>,
): Promise<{ inputs: Record<string, unknown>; secrets: PromptSecrets | undefined }> {
  const resolved = services.secrets
  if (!resolved) return { inputs, secrets: undefined }
  const { substitute, detect } = resolved.forModel(request.model)
  if (!resolved.substitutes && detect.length === 0) return { inputs, secrets: undefined }
  const book = await Book.open(
    await services.standInKey(),
    { requestId: request.requestId, tenant: request.tenant },
    substitute,
    resolved.all,
  )
  const secrets: PromptSecrets = {
    book,
    substituted: {},
    detected: {},
    inPrompt: (text) => sentTexts(sent).some((t) => t.includes(text)),
  }
  const rewrite = async (text: string): Promise<string> => {
    for (const span of detect.length > 0 ? findSecrets(text, detect) : []) {
      bump(secrets.detected, span.kind)
    }
    if (substitute.length === 0) return text
    const done = await book.substitute(text)
    for (const { kind, count } of done.replaced) bump(secrets.substituted, kind, count)
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

/** Every text of the inputs the engine reads: message contents, parts, tool arguments, `prompt`. */
function sentTexts(inputs: Record<string, unknown>): string[] {
  const texts: string[] = []
  if (typeof inputs.prompt === 'string') texts.push(inputs.prompt)
  for (const message of Array.isArray(inputs.messages) ? (inputs.messages as unknown[]) : []) {
    if (!isRecord(message)) continue
    const { content, tool_calls: calls } = message
    if (typeof content === 'string') texts.push(content)
    else if (Array.isArray(content)) {
      for (const part of content)
        if (isRecord(part) && typeof part.text === 'string') texts.push(part.text)
    }
    for (const call of Array.isArray(calls) ? calls : []) {
      const args = isRecord(call) && isRecord(call.function) ? call.function.arguments : undefined
      if (typeof args === 'string') texts.push(args)
      else if (args !== undefined) texts.push(JSON.stringify(args))
    }
  }
  return texts
}

function bump(counts: KindCounts, kind: string, by = 1): void {
  counts[kind] = (counts[kind] ?? 0) + by
}

type Rewrite = (text: string) => Promise<string>

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
  const { content, tool_calls: calls } = message
  if (typeof content === 'string') {
    const text = await rewrite(content)
    if (text !== content) out = { ...out, content: text }
  } else if (Array.isArray(content)) {
    const parts = await mapChanged(content as unknown[], async (part) => {
      if (!isRecord(part) || typeof part.text !== 'string') return part
      const text = await rewrite(part.text)
      return text === part.text ? part : { ...part, text }
    })
    if (parts !== content) out = { ...out, content: parts }
  }
  if (Array.isArray(calls)) {
    const rewritten = await mapChanged(calls as unknown[], (call) => rewriteToolCall(call, rewrite))
    if (rewritten !== calls) out = { ...out, tool_calls: rewritten }
  }
  return out
}

/** A tool call's arguments: inside their JSON when they parse (escapes respected), else as text. */
async function rewriteToolCall(call: unknown, rewrite: Rewrite): Promise<unknown> {
  if (!isRecord(call) || !isRecord(call.function)) return call
  const args = call.function.arguments
  let next: unknown = args
  if (typeof args === 'string') {
    let parsed: unknown
    let json = true
    try {
      parsed = JSON.parse(args)
    } catch {
      json = false
    }
    if (json && depthOf(parsed) <= MAX_JSON_DEPTH) {
      const value = await rewriteJson(parsed, rewrite)
      next = value === parsed ? args : JSON.stringify(value)
    } else next = await rewrite(args)
  } else if (isRecord(args)) next = await rewriteJson(args, rewrite)
  return next === args ? call : { ...call, function: { ...call.function, arguments: next } }
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
async function rewriteJson(value: unknown, rewrite: Rewrite): Promise<unknown> {
  if (typeof value === 'string') return rewrite(value)
  if (Array.isArray(value)) return mapChanged(value, (v) => rewriteJson(v, rewrite))
  if (!isRecord(value)) return value
  const entries = Object.entries(value)
  const values = await mapChanged(
    entries.map(([, item]) => item),
    (item) => rewriteJson(item, rewrite),
  )
  if (values === undefined || values.every((v, i) => v === entries[i]![1])) return value
  // Built with fromEntries: a "__proto__" key of parsed JSON stays a key, never a prototype.
  return Object.fromEntries(entries.map(([key], i) => [key, values[i]]))
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
