/**
 * @module The comments of a TypeScript source, for the rule that comments name no work session or
 * issue number. A scanner, not a parser: it steps over strings, template literals (and the code in
 * their `${}`) and regular expressions, so a `//` in a URL or a pattern is not taken for a comment.
 */

/** What may stand before a `/` that starts a regular expression rather than a division. */
const BEFORE_REGEX = new Set([
  ...'(,=:[!&|?{};+-*%<>~^',
  '',
  'return',
  'typeof',
  'case',
  'do',
  'else',
  'in',
  'of',
  'new',
  'delete',
  'void',
  'throw',
  'yield',
  'await',
])

/** The text of every `//` and `/* … *\/` comment in `source`, each with its delimiters. */
export function comments(source: string): string[] {
  const found: string[] = []
  // One entry per open `${`: how many `{` inside it are still open.
  const templates: number[] = []
  // The last token's text (a punctuator or a keyword), or 'value' after anything a `/` divides.
  let last = ''
  let i = 0

  /** Steps over template text from `i` to its closing backtick or its next `${`. */
  const templateText = (): void => {
    while (i < source.length) {
      const c = source[i]!
      if (c === '\\') i += 2
      else if (c === '`') {
        i++
        last = 'value'
        return
      } else if (c === '$' && source[i + 1] === '{') {
        i += 2
        templates.push(0)
        last = '{'
        return
      } else i++
    }
  }

  while (i < source.length) {
    const c = source[i]!
    const next = source[i + 1]
    if (c === '/' && next === '/') {
      const end = source.indexOf('\n', i)
      const stop = end < 0 ? source.length : end
      found.push(source.slice(i, stop))
      i = stop
    } else if (c === '/' && next === '*') {
      const end = source.indexOf('*/', i + 2)
      const stop = end < 0 ? source.length : end + 2
      found.push(source.slice(i, stop))
      i = stop
    } else if (c === "'" || c === '"') {
      i++
      while (i < source.length && source[i] !== c && source[i] !== '\n') {
        i += source[i] === '\\' ? 2 : 1
      }
      i++
      last = 'value'
    } else if (c === '`') {
      i++
      templateText()
    } else if (c === '}' && templates.length > 0 && templates.at(-1) === 0) {
      templates.pop()
      i++
      templateText()
    } else if (c === '/' && BEFORE_REGEX.has(last)) {
      let inClass = false
      i++
      while (i < source.length && source[i] !== '\n') {
        const r = source[i]!
        if (r === '\\') i++
        else if (r === '[') inClass = true
        else if (r === ']') inClass = false
        else if (r === '/' && !inClass) break
        i++
      }
      i++
      last = 'value'
    } else if (/[\w$]/.test(c)) {
      const word = /^[\w$]+/.exec(source.slice(i, i + 64))![0]
      i += word.length
      last = BEFORE_REGEX.has(word) ? word : 'value'
    } else {
      if (templates.length > 0 && c === '{') templates[templates.length - 1]!++
      if (templates.length > 0 && c === '}') templates[templates.length - 1]!--
      if (!/\s/.test(c)) last = c === ')' || c === ']' || c === '}' ? 'value' : c
      i++
    }
  }
  return found
}
