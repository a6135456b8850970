import { describe, expect, it } from 'vitest'
import { matchEcho } from '../../src/core/canary'

const C = 'cnry_0123456789abcdefghjkmnpq'
const ANSWER = 'Oslo is the capital of Norway.'

describe('matchEcho', () => {
  it('should accept the echoes real models write, and return the text after them', () => {
    const cases: [string, string][] = [
      [`${C}\n${ANSWER}`, ANSWER],
      [`${C}\r\n${ANSWER}`, ANSWER],
      [`  \n${C}\n\n${ANSWER}`, `\n${ANSWER}`],
      [`"${C}"\n${ANSWER}`, ANSWER],
      [`'${C}'\n${ANSWER}`, ANSWER],
      [`\`${C}\`\n${ANSWER}`, ANSWER],
      [`**${C}**\n${ANSWER}`, ANSWER],
      [`*${C}*\n${ANSWER}`, ANSWER],
      [`_${C}_\n${ANSWER}`, ANSWER],
      [`Code: ${C}\n${ANSWER}`, ANSWER],
      [`**Code:** \`${C}\`\n${ANSWER}`, ANSWER],
      [`Canary - ${C}\n${ANSWER}`, ANSWER],
      [`${C.toUpperCase()}\n${ANSWER}`, ANSWER],
      [`\`\`\`\n${C}\n\`\`\`\n${ANSWER}`, ANSWER],
      [`\`\`\`text\n${C}\n\`\`\`\n\n${ANSWER}`, `\n${ANSWER}`],
      [`${C}. ${ANSWER}`, ANSWER],
      [`${C} ${ANSWER}`, ANSWER],
    ]
    for (const [leading, rest] of cases) {
      expect(matchEcho(leading, C, false), JSON.stringify(leading)).toEqual({
        status: 'echoed',
        rest,
      })
    }
  })

  it('should accept a bare echo at the end of the whole reply', () => {
    expect(matchEcho(`**${C}**`, C, true)).toEqual({ status: 'echoed', rest: '' })
    expect(matchEcho(`${C}\n`, C, true)).toEqual({ status: 'echoed', rest: '' })
  })

  it('should stay pending while the echo or its decoration may still arrive', () => {
    for (const leading of [
      '',
      '  ',
      '**Co',
      C.slice(0, 20),
      C,
      `**${C}*`,
      `${C}\r`,
      `\`\`\`\n${C}\n`,
      `\`\`\`\n${C}\n\`\``,
    ]) {
      expect(matchEcho(leading, C, false), JSON.stringify(leading)).toEqual({ status: 'pending' })
    }
  })

  it('should be missing when the reply ends without the echo', () => {
    expect(matchEcho(ANSWER, C, true)).toEqual({ status: 'missing' })
    expect(matchEcho('', C, true)).toEqual({ status: 'missing' })
    expect(matchEcho(C.slice(0, 28), C, true)).toEqual({ status: 'missing' })
  })

  it('should be missing once the canary can no longer end within maxLeadChars', () => {
    expect(matchEcho(' '.repeat(35), C, false)).toEqual({ status: 'pending' })
    expect(matchEcho(' '.repeat(36), C, false)).toEqual({ status: 'missing' })
    expect(matchEcho('Code:', C, false, { maxLeadChars: 34 })).toEqual({ status: 'pending' })
    expect(matchEcho('Code: ', C, false, { maxLeadChars: 34 })).toEqual({ status: 'missing' })
  })

  it('should be missing as soon as the reply opens with answer text', () => {
    expect(matchEcho('Oslo is the capital of Norway and it', C, false)).toEqual({
      status: 'missing',
    })
    expect(matchEcho('Oslo.\n', C, false)).toEqual({ status: 'missing' })
    expect(matchEcho('Here is the code you asked for: ', C, false)).toEqual({ status: 'pending' })
    expect(matchEcho('Here is the code: cnry_01', C, false)).toEqual({ status: 'pending' })
    expect(matchEcho('Here is the code you asked for today: cnry_1', C, false)).toEqual({
      status: 'missing',
    })
  })

  it('should reach the same verdict whatever the chunking', () => {
    const replies = [`**Code:** \`${C}\`\n${ANSWER}`, ANSWER, `\`\`\`\n${C}\n\`\`\`\n${ANSWER}`]
    for (const reply of replies) {
      const whole = matchEcho(reply, C, true)
      let decided = matchEcho('', C, false)
      for (let n = 1; n <= reply.length && decided.status === 'pending'; n++) {
        decided = matchEcho(reply.slice(0, n), C, n === reply.length)
      }
      expect(decided.status, reply).toBe(whole.status)
    }
  })

  it('should be missing for a late echo, even once it has arrived', () => {
    const late = `${'Sure, let me think about this carefully. '.repeat(2)}${C}\n${ANSWER}`
    expect(matchEcho(late, C, false)).toEqual({ status: 'missing' })
    expect(matchEcho(late, C, true)).toEqual({ status: 'missing' })
  })

  it('should be missing when answer text precedes the echo on earlier lines', () => {
    expect(matchEcho(`Oslo.\nMore text.\n${C}\n`, C, false)).toEqual({ status: 'missing' })
  })

  it("should be missing for another request's canary", () => {
    const other = 'cnry_zzzzzzzzzzzzzzzzzzzzzzzz'
    expect(matchEcho(`${other}\n${ANSWER}`, C, false)).toEqual({ status: 'missing' })
  })
})
