/**
 * @module What the core asks of its two evidence plug-ins — foreign content (another tenant's prompt
 * text in an answer) and secrets (stand-ins in the prompt, restored in the answer) — and the shapes
 * their findings carry into verdicts and records. The core imports no plug-in: an entry registers
 * them (src/default-plugins.ts) and the guard is built with what was registered.
 */
import type { CanaryKey } from '../canary'
import type { GuardError } from '../errors'
import type { Channel } from '../format/frames'
import type { RequestMemo } from '../memo/text-memo'
import type { AnswerView, Check } from '../verify/check'

/** The plug-ins a guard is built with; one left out is a check the guard does not have. */
export interface EvidencePlugins {
  content?: ContentPlugin
  secrets?: SecretsPlugin
}

/** What a plug-in may use of the guard it joins. */
export interface PluginHost {
  /** The guard's `secret` option (validated). */
  readonly secret: string
  /** The canary key, imported once per guard. */
  key(): Promise<CanaryKey>
  now(): number
}

/** The foreign-content plug-in: resolves the `content` option group, once per guard. */
export interface ContentPlugin {
  /** The check's per-guard state, or undefined when the option turns it off. Throws on a bad option. */
  create(options: unknown, host: PluginHost): ContentBook | undefined
}

/** The foreign-content check's per-guard state: the book of recent prompts and the second opinion. */
export interface ContentBook {
  /** Derives what printing needs (once per guard); before `print`. */
  ready(): Promise<void>
  /**
   * Registers one request's prompt, whose call is out; it is printed when the returned function is
   * first called, or before any answer's next lookup, whichever is first.
   */
  print(prompt: PromptToPrint): () => PrintedPrompt
  /** The second opinion of one request's answers; undefined when it is off. */
  recall(request: RecallRequest): Recall | undefined
  /**
   * Bytes it holds beyond what it holds once first used, grown with traffic and kept (the fingerprint
   * table's second generation): memory admission leaves them out of what requests may reserve.
   */
  heldBytes?(): number
}

/** One request's prompt as the book prints it. */
interface PromptToPrint {
  model: string
  tenant: string
  texts: () => readonly string[]
  /** The request's own assistant turns: its own text for the answer's check. */
  said: () => readonly string[]
  waitUntil: ((promise: Promise<unknown>) => void) | undefined
  memo: RequestMemo | undefined
}

/** What a second opinion needs of the request and of the guard. */
interface RecallRequest {
  model: string
  requestId: string
  /** The request's inputs as the client sent them (the last question is read from them). */
  inputs: Record<string, unknown>
  /** Runs a clean-room request through the guard: never printed, never asked again. */
  ask(tenant: string, inputs: Record<string, unknown>): Promise<unknown>
}

/** A clean-room continuation of an answer's text, asked of the model. */
export interface Recall {
  /** Characters of the answer before its run that make the cue. */
  readonly cueChars: number
  /**
   * The fingerprints of what the model wrote, verified, from `cue` alone (less the cue's own): its
   * recall. Undefined when it could not be asked or its answer was not verified.
   */
  ask(cue: { text: string; head: string }, source: string): Promise<ReadonlySet<number> | undefined>
}

/** This request's prompt in the foreign-content book. */
export interface PrintedPrompt {
  /** A fresh watch over one answer, once the shared store has been read for this request. */
  answer(): Promise<AnswerContent>
  /** What this request's read of the shared store missed (said in the verdict, never excused). */
  gap(): Promise<StoreGap>
}

/** Another tenant's prompt text found in an answer: what the verdict and the record carry. */
export interface ContentFinding {
  /** The tenant whose prompt it carries. */
  source: string
  /** The longest run of consecutive distinct fingerprints of that tenant. */
  run: number
  /** Distinct fingerprints of that tenant's prompts matched anywhere in the answer. */
  matches: number
}

/** One answer's foreign-content watch, fed channel by channel. */
export interface AnswerContent {
  push(channel: Channel, text: string): void
  /** The answer ended: every channel is judged to its last word. */
  end(): void
  /** The evidence as found, before any second opinion. */
  evidence(): ContentFinding | undefined
  /** The evidence that still stands once the model has been asked about it (the second opinion). */
  confirmed(recall: Recall | undefined): Promise<ContentFinding | undefined>
  /** The check of the rest of a released stream, fed with what this watch read already. */
  check(options: ContentCheckOptions): Check
  /** A released, echo-verified answer: its words become known as the model's. */
  learn(): void
}

/** How a released stream's foreign-content check holds and ends it. */
interface ContentCheckOptions {
  /** Whether each channel's last words are held until judged (off under `async` release). */
  holdBack: boolean
  /** Where a token of this request's own starts in the channel (no other tenant's text crosses it). */
  barrier(channel: Channel): number
  recall: Recall | undefined
  /** Evidence after release: rejects with the stream's ending error, or resolves under observe. */
  onEvidence(found: ContentFinding): Promise<void>
}

/**
 * What one request's read of the shared store missed: `down` (only this isolate's own table was
 * used), the shards it left out, or nothing (`undefined`: all read, or no store).
 */
export type StoreGap = { down: true } | { shards: number[] } | undefined

/** The secrets plug-in: resolves the `secrets` option group, once per guard. */
export interface SecretsPlugin {
  /** The prompt hook, or undefined when no secret is looked for. Throws on a bad option. */
  create(options: unknown, host: PluginHost): SecretsHook | undefined
}

/** The secrets plug-in's prompt hook. */
export interface SecretsHook {
  /**
   * The inputs with each secret the model's policy substitutes replaced by a stand-in (the same
   * object when nothing changed), and what was found; undefined secrets: nothing to restore.
   */
  substitute(
    request: { requestId: string; tenant: string; model: string },
    inputs: Record<string, unknown>,
    memo: RequestMemo | undefined,
  ): Promise<{ inputs: Record<string, unknown>; secrets: PromptSecrets | undefined }>
}

type KindCounts = Record<string, number>
type Texts = Partial<Record<Channel, string>>

/** A request's secrets, as substitution left them, and the checks of its answers. */
export interface PromptSecrets {
  /** Secrets replaced by stand-ins, per kind. */
  substituted: KindCounts
  /** Secrets found by `detect` kinds and sent as they were, per kind. */
  detected: KindCounts
  /** A whole answer: this request's stand-ins back as values, another request's found. */
  restore(texts: Texts, jsonContent: boolean): Promise<AnswerStandIns>
  /** The text with every stand-in-shaped token replaced (a withheld answer is stored so). */
  redact(text: string): string
  /** The stand-in check of a released stream. */
  check(view: AnswerView, options: StandInCheckOptions): Check
}

/** How a released stream's stand-in check restores values and ends the stream. */
interface StandInCheckOptions {
  /** Whether the content is JSON (values restored escaped in it; tool arguments always are). */
  jsonContent: boolean
  /** Another request's stand-in; returns the error that ends the stream. */
  onForeign(finding: StandInFinding, seen: Record<string, string>): Promise<GuardError>
}

/** What the stand-ins of a whole answer came to. */
export interface AnswerStandIns {
  /** The texts with this request's values back (the same object when there were none). */
  texts: Texts
  foreign: StandInFinding[]
  /** Values restored, per kind. */
  restored: KindCounts
}

/** Another request's stand-in found in a channel (its kind and, full layout, the minting tenant's tag). */
export interface StandInFinding {
  channel: Channel
  kind: string
  tenantTag?: string
}
