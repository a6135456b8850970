/**
 * @module The console's one stylesheet, served from the Worker under a content-hashed name so it can be
 * cached for a year and still change the moment the CSS does (no CDN: the Worker works offline).
 */

/**
 * The stylesheet. Classes only: the CSP allows no inline `style` attributes or elements.
 *
 * Charts scale with their card, and SVG text with them: at phone width the 720-unit charts were drawn
 * at under half size, their 11-unit labels painted at 5 px. Below 640 px a chart keeps a
 * minimum width (its card scrolls sideways), its labels are drawn larger in chart units, and the
 * scatter's y title, which the larger tick labels would cross, gives way to the card's heading.
 */
export const CONSOLE_CSS = `
:root{color-scheme:light;--fg:#1b1f24;--muted:#5b636e;--line:#d6dae0;--bg:#fff;--soft:#f4f6f8;--accent:#0072b2;--bad:#b42318}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--soft)}
header.top{display:flex;align-items:center;gap:24px;padding:10px 24px;background:#14213d;color:#fff}
header.top a{color:#fff;text-decoration:none;opacity:.85}
header.top a[aria-current=page]{opacity:1;font-weight:600;border-bottom:2px solid #fff}
header.top .brand{font-weight:700;opacity:1}
header.top form{margin-left:auto}
header.top button{background:transparent;color:#fff;border:1px solid #fff8;border-radius:4px;padding:4px 10px;cursor:pointer}
main{max-width:1180px;margin:0 auto;padding:20px 24px 48px}
h1{font-size:20px;margin:0 0 16px}
h2{font-size:16px;margin:0 0 8px}
section.card{background:var(--bg);border:1px solid var(--line);border-radius:8px;padding:16px;margin:0 0 16px}
.grid2{display:grid;grid-template-columns:1fr 1fr;gap:16px}
@media (max-width:1000px){.grid2{grid-template-columns:1fr}}
p.note,.muted{color:var(--muted);margin:4px 0 8px}
.chart{width:100%;height:auto;display:block}
.chart .grid{stroke:#e6e9ee;stroke-width:1}
.chart .tick,.chart .legend{font-size:11px;fill:var(--muted)}
.chart .axis{font-size:12px;fill:var(--fg)}
.chart .bound{stroke:var(--bad);stroke-width:2}
.chart .baseline{stroke:#009e73;stroke-width:2;stroke-dasharray:6 4}
.chart .pt.release{fill:#0072b2;fill-opacity:.55}
.chart .pt.quarantine{stroke:var(--bad);stroke-width:2.5;fill:none}
.chart .pt.reject{stroke:#e69f00;stroke-width:2;fill:none}
.chart .series{stroke-width:2}
.key{display:flex;gap:16px;flex-wrap:wrap;margin:8px 0 0;padding:0;list-style:none;color:var(--muted);font-size:12px}
.key .sw{display:inline-block;width:18px;height:0;border-top:2px solid;vertical-align:middle;margin-right:6px}
.key .sw.bound{border-color:var(--bad)}.key .sw.baseline{border-color:#009e73;border-top-style:dashed}
.key .sw.release{width:8px;height:8px;border:0;border-radius:50%;background:#0072b2}
.key .sw.quarantine{width:auto;border:0;color:var(--bad);font-weight:700}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:6px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{font-weight:600;color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.03em}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
.tag{display:inline-block;padding:1px 7px;border-radius:10px;background:#eef2f7;margin:0 4px 2px 0;font-size:12px}
.tag.hard{background:#fde8e7;color:var(--bad)}
.tag.observed{background:#fff4d6;color:#7a5a00}
form.filters{display:flex;flex-wrap:wrap;gap:10px;align-items:end}
form.filters label{display:flex;flex-direction:column;font-size:12px;color:var(--muted);gap:2px}
input,select{font:inherit;padding:5px 7px;border:1px solid var(--line);border-radius:4px;background:#fff}
button.primary{font:inherit;background:var(--accent);color:#fff;border:0;border-radius:4px;padding:6px 14px;cursor:pointer}
a{color:var(--accent)}
.pager{display:flex;gap:12px;margin-top:12px}
pre.withheld{white-space:pre-wrap;word-break:break-word;background:#fbfbfc;border:1px solid var(--line);border-radius:6px;padding:12px;max-height:480px;overflow:auto;font-size:12.5px}
dl.figures{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:0}
dl.figures dt{color:var(--muted)}
dl.figures dd{margin:0;font-variant-numeric:tabular-nums}
.guide ol{margin:6px 0 0 18px;padding:0}
.login{max-width:380px;margin:12vh auto;background:#fff;border:1px solid var(--line);border-radius:8px;padding:24px}
.login label{display:block;margin:12px 0 4px}
.login input{width:100%}
.error{color:var(--bad);font-weight:600}
.empty{color:var(--muted);font-style:italic}
@media (max-width:640px){
main{padding:12px 10px 32px}
section.card{padding:10px;overflow-x:auto}
.chart.scatter,.chart.bars{min-width:560px}
.chart.rows,.chart.lines{min-width:460px}
.chart.scatter .tick,.chart.bars .tick,.chart.bars .legend{font-size:14px}
.chart.scatter .axis{font-size:15px}
.chart .axis.y{display:none}
}
`

/** FNV-1a, 32 bits: a cache-busting fingerprint, not a security property. */
function fingerprint(text: string): string {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return (h >>> 0).toString(16).padStart(8, '0')
}

/**
 * The stylesheet's path: its name changes with its content, so it is cached `immutable`.
 *
 * @example
 * html`<link rel="stylesheet" href="${STYLE_PATH}">`
 */
export const STYLE_PATH = `/admin/assets/console.${fingerprint(CONSOLE_CSS)}.css`
