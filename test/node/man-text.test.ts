import { describe, expect, it } from 'vitest'
import { glyph, manText } from '../held-apart/roff'

/**
 * Manual pages as the held-apart corpus reads them: roff's character escapes decoded, so Swedish and
 * German pages keep their letters (they were dropped: "anv ndare", "ndert"). The pages themselves are
 * read by the held-apart test (test/node/held-apart.test.ts, `test:slow`).
 */
describe('manText', () => {
  it('should decode the accented letters of groff escapes, named and bracketed', () => {
    expect(manText('Manualen \\(:ar avsedd f\\(:or anv\\(:andare som vill f\\(oa')).toBe(
      'Manualen är avsedd för användare som vill få',
    )
    expect(manText("\\(:A\\(:O\\(oA \\(:u\\(:U\\(ss \\('e\\(`a\\(,c\\(/l\\(~n\\(^o")).toBe(
      'ÄÖÅ üÜß éàçłñô',
    )
    expect(manText('\\[:a]\\[oa]\\[ss] \\[AE]\\[/o]')).toBe('äåß Æø')
  })

  it("should decode groff's preconv output: code points, and a letter with combining marks", () => {
    expect(manText('\\[u00E5]tg\\[u00E4]rd \\[u00C4]ndern \\[u0061_0308] \\[u1F600]')).toBe(
      'åtgärd Ändern ä 😀',
    )
  })

  it('should print strings, the preambles’ and the page’s own', () => {
    const page = [
      '.ds Xy Gr\\(:u\\(sse',
      '.ie n \\{\\',
      '.    ds L" ""',
      '.\\}',
      'user\\*(Aqs \\*[Aq]x\\*(Aq, \\*(L"quoted\\*(R", \\*(C+ \\*(-- \\*(Xy \\*[Xy]',
    ].join('\n')
    expect(manText(page).trim()).toBe("user's 'x', “quoted”, C++ — Grüße Grüße")
  })

  it('should decode \\e, \\-, \\& and the spacing escapes, one escape at a time', () => {
    expect(manText('tar \\-\\-help\\&. C:\\ePath\\e \\fBbold\\fR \\s-2small\\s0 a\\ b\\~c')).toBe(
      'tar --help. C:\\Path\\ bold small a b c',
    )
    // `\e` prints a backslash: what follows it is text, not another escape.
    expect(manText('\\e(aq \\e[u00E5] \\e-')).toBe('\\(aq \\[u00E5] \\-')
    expect(manText('quotes: \\(lqa\\(rq \\(Bqb\\(lq \\(Foc\\(Fc \\(aq \\(em \\(en \\(bu')).toBe(
      "quotes: “a” „b“ «c» ' — – •",
    )
  })

  it('should keep the words of headings and font requests, and join lines continued with \\c', () => {
    const page = [
      '.\\" a comment',
      '.SH "SE \\(:AVEN"',
      '.BR tar\\-split (1)',
      'f\\(:orst\\c',
      '\\(oaelse \\" trailing comment',
      '.PP',
      'n\\(:asta',
    ].join('\n')
    expect(manText(page)).toBe('\n\nSE ÄVEN\n\ntar-split (1)\nförståelse \n\n\nnästa')
  })

  it('should print nothing for a glyph it does not know, never its name', () => {
    expect(manText('a\\[zzzz]b\\(qqc\\[u110000]d\\*(Zzd')).toBe('abcdd')
    expect(glyph('u00E5')).toBe('å')
    expect(glyph('*W')).toBe('Ω')
    expect(glyph('*p')).toBe('π')
  })
})
