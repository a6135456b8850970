/**
 * @module The audit's report as data: inputs, findings with their evidence, time windows, flows of
 * data between senders, coverage of each check, and the content index's figures.
 */
import type { ModelProfile } from '../../core'
import type { ContentIndexStats } from './content-index'
import type { CheckName, LogFormat } from './record'
import type { Signal, SignalSettings } from './signals'

/** A log file (or any line source): read twice, once per pass. */
export interface LogSource {
  /** Its name in the report (the path as given). */
  name: string
  /** Its size in bytes, for progress. */
  size?: number
  /** Its lines, without line ends. Called once per pass. */
  lines(): AsyncIterable<string>
}

/** Options of {@link runAudit}. */
export interface AuditOptions {
  /** Per-model profile overrides, merged over the guard's built-in profiles (as `GuardOptions.models`). */
  models?: Record<string, Partial<ModelProfile>>
  /** Memory of the content index, bytes. @default 268435456 (256 MiB) */
  indexBudgetBytes?: number
  /** A source request must be at most this much older than the answer, ms. @default Infinity */
  sourceWindowMs?: number
  /**
   * Judge only requests that started in `[sinceMs, untilMs)` (ms since the epoch; requests without a
   * time are judged). Every request is still indexed: a source may precede the period.
   */
  sinceMs?: number
  untilMs?: number
  /** Width of the report's time windows, ms. @default 3600000 (1 hour) */
  windowMs?: number
  /** Signal thresholds. */
  signals?: Partial<SignalSettings>
  /** Quote the matched text in the report (it is the logs' own text). @default true */
  excerpts?: boolean
  /** Findings kept in full; beyond it they are counted only. @default 10000 */
  maxFindings?: number
  /** Called as the passes advance (drives the CLI's progress bar). */
  onProgress?: (progress: AuditProgress) => void
  /** 32 bytes for the fingerprint key. @default random */
  seed?: Uint8Array
  /**
   * Public texts your tenants send or your model recites (your app's documents, licences, templates):
   * never evidence, as text two senders sent is not. Added to the built-in background.
   */
  publicTexts?: readonly string[]
  /**
   * The built-in background of common public text (src/tools/audit/background.ts: licences, compiler and
   * bundler helpers, README boilerplate mined from npm packages). @default true
   */
  background?: boolean
}

/** Progress of a run. */
export interface AuditProgress {
  pass: 1 | 2
  file: string
  /** Characters read in this pass over all files (≈ bytes for ASCII logs). */
  read: number
  /** Bytes of all files (0 when unknown). */
  total: number
  records: number
  findings: number
}

/** A malformed line (or page item). */
export interface Malformed {
  line: number
  item?: number
  why: string
}

/** What one input file held and lacked. */
export interface FileReport {
  name: string
  lines: number
  characters: number
  /** Records per format (a file may mix formats). */
  formats: Partial<Record<LogFormat, number>>
  records: number
  malformed: { count: number; first: Malformed[] }
  /** Records lacking what some checks need. */
  gaps: {
    noPrompt: number
    noAnswer: number
    noTiming: number
    noTenant: number
    noProfile: number
    encrypted: number
  }
  /** A whole-file JSON document (a list API page) rather than JSON lines. */
  document: boolean
  /** Why the file could not be read at all, if it could not. */
  error?: string
}

/** Whose data appeared where. */
export interface SourceRequest {
  id: string
  where: string
  startMs?: number
  tenant?: string
  metadata?: Record<string, string | number | boolean | null>
  /** Fingerprints of this request matched in the answer. */
  matches: number
}

/** Foreign content in one answer, from one other principal. */
export interface ForeignSource {
  /** The tenant (or `request <id>` when the log names none). */
  principal: string
  requests: SourceRequest[]
  run: number
  passages: number
  matches: number
  channel: string
  /** Units of the passage found verbatim in the source request's prompt (exact pass). */
  span?: number
  /**
   * Of them, units of no common text (another sender's too, public background, the model's own
   * phrasing): proof from 30 (the guaranteed span, PROOF_UNITS).
   */
  privateSpan?: number
  /** The answer's text of that passage, or of the longest run (absent with `excerpts: false`). */
  excerpt?: string
}

/** One suspicious request. */
export interface Finding {
  id: string
  format: LogFormat
  where: string
  startMs?: number
  tenant?: string
  model?: string
  status?: number
  metadata?: Record<string, string | number | boolean | null>
  /** Strongest first. */
  signals: Signal[]
  foreign: ForeignSource[]
  /** At least one signal is proof. */
  certain: boolean
  /** The guard withheld this answer (verdict logs): the client never received it. */
  withheld: boolean
  /** Verdict logs: the tenants whose data the guard found in the answer (its canaries). */
  sourceTenants?: string[]
}

/** A window of the report's timeline. */
export interface TimeWindow {
  startMs: number
  endMs: number
  findings: number
  certain: number
  ids: string[]
}

/** One flow of data: answers of `to` carried prompts of `from`. */
export interface DataFlow {
  from: string
  to: string
  answers: number
  sourceRequests: string[]
  answerRequests: string[]
}

/** Per check: how many requests it could judge, and why not the others. */
export interface CheckCoverage {
  judged: number
  skipped: Record<string, number>
}

/** The audit's report (rendered by render-report.ts as text, JSON or CSV). */
export interface AuditReport {
  /** `signature`: at least one proof; `suspicious`: indications only; `clean`: nothing. */
  verdict: 'signature' | 'suspicious' | 'clean'
  /** 0 nothing found (or indications only), 1 signature found. */
  exitCode: 0 | 1
  summary: string
  files: FileReport[]
  records: number
  findings: Finding[]
  /** Findings beyond `maxFindings`, counted only. */
  findingsOmitted: number
  windows: TimeWindow[]
  flows: DataFlow[]
  coverage: Record<CheckName, CheckCoverage>
  disabledByFormat: { format: LogFormat; check: CheckName; why: string }[]
  models: { model: string; requests: number; pool?: number; maxPrefillTokensPerSecond?: number }[]
  index: ContentIndexStats & { guaranteedSpanUnits: number; note: string }
  settings: {
    windowMs: number
    sourceWindowMs: number
    sinceMs?: number
    untilMs?: number
  } & SignalSettings
  /** Requests outside `--since`/`--until`, not judged. */
  outsidePeriod: number
}
