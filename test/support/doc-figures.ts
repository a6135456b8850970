/**
 * The docs' rules on figures and words, as pure functions so a test can feed them a doc made to break
 * them.
 *
 * A measured figure is a number followed by a unit (ns, µs, ms, s, min, B, KB, KiB, MB, MiB, GB,
 * GiB, %, ×, tokens/s, req/s; `s` and `min` after a space, so "422s" is a plural), outside code fences, `code spans`, HTML comments and link targets.
 * Settings, defaults and limits are written as code (`30 s`, `3 MiB`): they are configured, not
 * measured. Each figure's unit of text (a paragraph, a list item or a table row) must cite a
 * `bench/results/*.json` file, and one of the cited files must hold the number: as the doc writes it,
 * or a JSON number rounded to the doc's precision, after turning it into the doc's unit (a ratio ×100
 * for a percentage, ms as µs or s, bytes as KiB or MB).
 */

/** One measured figure with the unit of text it stands in. */
export type Figure = { number: string; unit: string; text: string; cites: string[] }

const UNIT = String.raw`(?:tokens\/s|req\/s|ns|µs|us|ms|min|s|KiB|MiB|GiB|KB|MB|GB|B|%|×)`
const NUMBER = String.raw`\d+(?:,\d{3})*(?:\.\d+)?`
const FIGURE = new RegExp(
  String.raw`(?<![\w.\/-])(${NUMBER})(?:\s*[–-]\s*(${NUMBER}))?(?:\s(?=s\b|min\b)|\s?(?!s\b|min\b))(${UNIT})(?![\w\/])`,
  'g',
)
const CITE = /bench\/results\/[\w.-]+\.json/g

/** The units of text of a Markdown doc: paragraphs, list items and table rows, with their citations. */
export function textUnits(markdown: string): { text: string; cites: string[] }[] {
  const units: { text: string; cites: string[] }[] = []
  let fenced = false
  let current: string[] = []
  const flush = (): void => {
    if (current.length === 0) return
    const raw = current.join('\n')
    const cites = [...raw.matchAll(CITE)].map((m) => m[0])
    units.push({ text: raw, cites })
    current = []
  }
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) {
      flush()
      fenced = !fenced
      continue
    }
    if (fenced) continue
    if (line.trim() === '') flush()
    else if (/^\s*\|/.test(line)) {
      flush()
      current.push(line)
      flush()
    } else if (/^\s*(?:[-*]|\d+\.)\s/.test(line) || /^#/.test(line)) {
      flush()
      current.push(line)
    } else current.push(line)
  }
  flush()
  return units
}

/** The measured figures of a doc. */
export function figures(markdown: string): Figure[] {
  const out: Figure[] = []
  for (const { text, cites } of textUnits(markdown)) {
    const prose = text
      .replace(/<!--[\s\S]*?-->/g, ' ')
      .replace(/`[^`]*`/g, ' ')
      .replace(/\]\([^)]*\)/g, ']')
    for (const m of prose.matchAll(FIGURE)) {
      for (const n of [m[1], m[2]]) {
        if (n) out.push({ number: n.replace(/,/g, ''), unit: m[3]!, text, cites })
      }
    }
  }
  return out
}

/** The factors that turn a JSON number into `unit`: the same quantity in a neighbouring unit. */
function scales(unit: string): number[] {
  if (unit === '%') return [1, 100]
  if (/^(?:ns|µs|us|ms|s)$/.test(unit)) return [1, 1e3, 1e-3, 1e6, 1e-6]
  if (/^(?:KiB|MiB|GiB)$/.test(unit)) return [1, 1 / 1024, 1 / 1024 ** 2, 1 / 1024 ** 3]
  if (/^(?:KB|MB|GB)$/.test(unit)) return [1, 1e-3, 1e-6, 1e-9]
  return [1]
}

/** Whether a results file's text holds `number` as written, or a number that rounds to it. */
export function holds(json: string, number: string, unit: string): boolean {
  const places = number.includes('.') ? number.split('.')[1]!.length : 0
  const want = Number(number)
  const literal = new RegExp(String.raw`(?<![\d.])${number.replace('.', '\\.')}(?![\d])`)
  if (literal.test(json)) return true
  for (const m of json.matchAll(/-?\d+(?:\.\d+)?(?:e[-+]?\d+)?/gi)) {
    const value = Math.abs(Number(m[0]))
    if (scales(unit).some((k) => Number((value * k).toFixed(places)) === want)) return true
  }
  return false
}

/** The problems of a doc's figures: uncited, or not in the file cited. `read` gives a file's text. */
export function figureProblems(
  name: string,
  markdown: string,
  read: (path: string) => string | null,
): string[] {
  const problems: string[] = []
  for (const f of figures(markdown)) {
    const where = `${name}: ${f.number} ${f.unit} in "${f.text.replace(/\s+/g, ' ').slice(0, 100)}"`
    if (f.cites.length === 0) {
      problems.push(`${where} cites no bench/results file`)
      continue
    }
    const texts = f.cites.map((c) => read(c))
    if (texts.every((t) => t === null)) problems.push(`${where} cites ${f.cites} (missing)`)
    else if (!texts.some((t) => t !== null && holds(t, f.number, f.unit))) {
      problems.push(`${where}: not in ${f.cites.join(', ')}`)
    }
  }
  return problems
}

/** Words a user's doc must not hold: work-log words ("session", "issue N"), outside code. */
export function logWords(markdown: string): string[] {
  const prose = markdown
    .replace(/```[\s\S]*?```/g, ' ')
    .replace(/`[^`]*`/g, ' ')
    .replace(/\]\([^)]*\)/g, ']')
  return [...prose.matchAll(/\bsessions?\b|\bissues?\s+#?\d+/gi)].map((m) => m[0])
}

/**
 * Work-log words a code comment must not hold: "session" or "issue" followed by its number (with or
 * without `#`), in code spans too. Unnumbered, "session" is the code's own word (console logins).
 */
export function numberedLogWords(comment: string): string[] {
  return [...comment.matchAll(/\b(?:sessions?|issues?)\s+#?\d+/gi)].map((m) => m[0])
}

/** Words as `wc -w` counts them: runs of non-space. */
export function wordCount(text: string): number {
  return text.split(/\s+/).filter(Boolean).length
}
