import puppeteer, { type Browser, type Page } from 'puppeteer-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { causeIncidentOnWorker, runWorkerDemo } from '../../scripts/demo'
import { type ChildLike, type NodeHost, nodeHost } from '../ecosystem/node-host'
import { startWranglerDev } from '../ecosystem/wrangler-dev'
import { chat, document as tenantDocument } from '../support/prompts'

/**
 * The console in a real headless Chromium (Debian's, as .ci/run installs it) against the real Worker
 * under `wrangler dev` with `npm start`'s configuration, untouched: a few ordinary requests (the
 * README's curl, whole and streamed), two refusals, then `npm run demo:worker`'s run, whose last
 * request is withheld. The test logs in through the form, finds one mark per answered request in the
 * plot and the incident's among them, filters the list, opens the detail, and logs out. With
 * CONSOLE_SCREENSHOTS set to a directory (`npm run screenshots` sets docs/), it saves the three views.
 */
const MODEL = '@cf/zai-org/glm-5.3'
const ADMIN = 'dev-only-admin-secret'
const env = (globalThis as unknown as { process: { env: Record<string, string | undefined> } })
  .process.env

/** The few DOM members these tests read (the project's lib has no DOM types; this runs in Chromium). */
interface DomElement {
  dataset: Record<string, string | undefined>
  textContent: string
  value: string
  getAttribute(name: string): string | null
  getBBox(): { x: number; y: number; width: number; height: number }
}
interface DomDocument {
  body: DomElement
  cookie: string
  querySelector(selector: string): DomElement | null
  querySelectorAll(selector: string): { length: number }
}

let host: NodeHost
let dir = ''
let dev: ChildLike | undefined
let base = ''
let browser: Browser | undefined
let incident = ''
let record: {
  reasons: string[]
  sourceTenants: string[]
  withheld: Record<string, string>
  figures: { estimatedTokens?: number }
}
/** Requests that reached a verdict with a first token: released or withheld, one mark each. */
let answered = 0
let shots = ''

async function post(path: string, body: unknown, key: string): Promise<Response> {
  return fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  })
}

beforeAll(async () => {
  host = await nodeHost()
  shots = env.CONSOLE_SCREENSHOTS
    ? host.join(host.cwd, env.CONSOLE_SCREENSHOTS)
    : host.tempDir('console-shots-')
  // npm start's Worker and simulator, as they are.
  ;({ base, child: dev, dir } = await startWranglerDev(host))
  // localhost, not 127.0.0.1: the same socket, and the name every browser treats as a secure context.
  base = base.replace('127.0.0.1', 'localhost')
  // Ordinary traffic: the README's request, whole and streamed, and a longer document.
  const ordinary: [string, Record<string, unknown>][] = [
    ['dev-key-tenant-a', chat('Summarise our Q3 plan.')],
    ['dev-key-tenant-a', { ...chat('Summarise our Q3 plan.'), stream: true }],
    ['dev-key-tenant-b', chat(tenantDocument('TENANT-B', 1_500))],
    ['dev-key-tenant-b', { ...chat(tenantDocument('TENANT-B', 4_000)), stream: true }],
  ]
  for (const [key, inputs] of ordinary) {
    const res = await post('/v1/chat/completions', { model: MODEL, ...inputs }, key)
    expect(res.status).toBe(200)
    await res.text()
    answered++
  }
  // Two refusals over the ceiling (no engine call, no mark): the refusal chart's rows.
  for (const text of [
    'ქართული ენა არის ლამაზი და ძველი. '.repeat(27_000),
    '漢字の文書を要約してください。'.repeat(60_000),
  ]) {
    const res = await post(
      '/v1/chat/completions',
      { model: MODEL, ...chat(text) },
      'dev-key-tenant-a',
    )
    expect(res.status).toBe(400)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe(
      'context_length_exceeded',
    )
  }
  // `npm run demo:worker`: B's short request, A's payroll, B's over-pool prompt withheld.
  const report = await runWorkerDemo(base)
  expect(report.incident).not.toBeNull()
  incident = report.incident!.id
  answered += report.rows.filter((r) => r.status === '200' || r.incidentId !== null).length
  // What the JSON API says about it, to hold the pages to.
  record = (await (
    await fetch(`${base}/admin/incidents/${incident}`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    })
  ).json()) as typeof record
  browser = await puppeteer.launch({
    // Debian's package (`.ci/run` installs it); CHROMIUM_PATH for a browser elsewhere.
    executablePath: env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox'],
    defaultViewport: { width: 1280, height: 900 },
  })
}, 180_000)

afterAll(async () => {
  await browser?.close()
  if (dev) await host.stop(dev)
  if (dir) host.remove(dir)
}, 20_000)

/** All the text of the page (hidden text and SVG tooltips included: stricter than what is painted). */
async function text(page: Page): Promise<string> {
  return await page.evaluate(
    () => (globalThis as unknown as { document: DomDocument }).document.body.textContent,
  )
}

async function submit(page: Page, selector: string): Promise<void> {
  await Promise.all([page.waitForNavigation(), page.click(selector)])
}

describe('the console in headless Chromium', () => {
  it('should log in, plot one mark per answered request, filter, show the detail, log out', async () => {
    const page = await browser!.newPage()
    const violations: string[] = []
    page.on('console', (m) => {
      if (/Content Security Policy|Refused/.test(m.text())) violations.push(m.text())
    })

    // Not logged in: the console sends the browser to the login form.
    await page.goto(`${base}/admin/incidents/${incident}`)
    expect(new URL(page.url()).pathname).toBe('/admin/login')
    await page.type('#secret', 'not-the-secret')
    await submit(page, 'button[type=submit]')
    expect(await text(page)).toContain('Wrong admin secret.')
    await page.goto(`${base}/admin/`)
    await page.type('#secret', ADMIN)
    await submit(page, 'button[type=submit]')
    expect(new URL(page.url()).pathname).toBe('/admin/')
    const [cookie] = (await page.cookies()).filter((c) => c.name === 'guard_admin')
    expect(cookie).toMatchObject({
      httpOnly: true,
      secure: true,
      sameSite: 'Strict',
      path: '/admin',
    })
    // HttpOnly: the page's own script world cannot read it.
    expect(
      await page.evaluate(
        () => (globalThis as unknown as { document: DomDocument }).document.cookie,
      ),
    ).not.toContain('guard_admin')

    // The overview: one mark per answered request, the incident's among them, each on the side of
    // the physical line its verdict says (under it only for a first token faster than physics).
    const plotted = await page.evaluate((id) => {
      const dom = (globalThis as unknown as { document: DomDocument }).document
      const line = dom.querySelector('line[data-line="physical"]')
      const marks = [...(dom.querySelectorAll('.pt') as unknown as Iterable<DomElement>)]
      return marks.map((mark) => ({
        incident: mark.dataset.incident === id,
        action: mark.dataset.action,
        tokens: Number(mark.dataset.tokens),
        ttftMs: Number(mark.dataset.ttftMs),
        rate: Number(line?.dataset.tokensPerSecond),
      }))
    }, incident)
    // Under the line: a first token sooner than the physical prefill of the tokens charged (the
    // attributes are rounded: 1% of slack for a mark on the line, where an unjudged answer sits).
    const under = (p: { tokens: number; ttftMs: number; rate: number }) =>
      p.ttftMs < 0.99 * (p.tokens / p.rate) * 1000
    const impossible = record.reasons.includes('ttft_impossible')
    expect(plotted).toBeDefined()
    expect(plotted!.length).toBe(answered)
    expect(plotted!.filter((p) => p.action === 'release')).toHaveLength(answered - 1)
    const mark = plotted!.find((p) => p.incident)!
    expect(mark.action).toBe('quarantine')
    expect(mark.rate).toBe(1_000_000)
    if (impossible) expect(mark.ttftMs).toBeLessThan((mark.tokens / mark.rate) * 1000)
    else expect(under(mark)).toBe(false)
    for (const p of plotted!.filter((p) => p.action === 'release')) expect(under(p)).toBe(false)
    const overviewText = await text(page)
    // The two refusals, by reason and script class.
    const refused = await page.$$eval('#refusals rect[data-count]', (bars) =>
      bars.map((b) => [b.getAttribute('data-script'), Number(b.getAttribute('data-count'))]),
    )
    expect(refused.length).toBeGreaterThanOrEqual(2)
    expect(refused.reduce((n, [, count]) => n + Number(count), 0)).toBeGreaterThanOrEqual(2)
    expect(overviewText).toContain(
      `${impossible ? '1 answer' : '0 answers'} of @cf/zai-org/glm-5.3 came faster than a physical prefill`,
    )
    await page.screenshot({ path: host.join(shots, 'console-overview.png'), fullPage: true })

    // The list, filtered: the incident's row under its tenant, gone under another.
    await page.goto(`${base}/admin/incidents`)
    await page.type('input[name=tenant]', 'tenant-b')
    await page.select('select[name=reason]', record.reasons[0]!)
    await submit(page, '#filters button[type=submit]')
    const rowsB = await page.$$eval('tr[data-incident]', (rows) =>
      rows.map((r) => r.getAttribute('data-incident')),
    )
    const reasons = await page.$eval(
      `tr[data-incident="${incident}"]`,
      (r) => (r as unknown as DomElement).textContent,
    )
    expect(rowsB).toContain(incident)
    expect(reasons).toContain('tenant-b')
    const listed = new URL(page.url())
    expect(listed.searchParams.get('tenant')).toBe('tenant-b')
    await page.screenshot({ path: host.join(shots, 'console-incidents.png'), fullPage: true })
    await page.$eval('input[name=tenant]', (input) => {
      ;(input as unknown as DomElement).value = 'tenant-a'
    })
    await submit(page, '#filters button[type=submit]')
    expect(await page.$(`tr[data-incident="${incident}"]`)).toBeNull()
    expect(await text(page)).toContain('No incidents match these filters.')

    // The detail: reasons with guidance, sources, the withheld text, and no canary anywhere.
    await page.goto(`${base}/admin/incidents?tenant=tenant-b`)
    await submit(page, `tr[data-incident="${incident}"] a`)
    expect(new URL(page.url()).pathname).toBe(`/admin/incidents/${incident}`)
    const detail = await text(page)
    expect(detail).toContain('Reasons and what to do next')
    for (const reason of record.reasons) expect(detail).toContain(reason)
    // The figures its advice names: the prompt's count and the profile's pool.
    expect(detail).toContain(
      `Prompt tokens (estimate)${record.figures.estimatedTokens!.toLocaleString('en-US')}`,
    )
    expect(detail).toContain('Profile’s kvPoolTokens (GUARD_MODELS)681,280')
    for (const source of record.sourceTenants) expect(detail).toContain(source)
    // What the engine really answered B, withheld; a canary in it shows redacted.
    const withheld = Object.values(record.withheld).join('\n')
    if (/cnry_/i.test(withheld)) expect(detail).toContain('[canary]')
    expect(detail).not.toMatch(/cnry_/i)
    expect(await page.content()).not.toMatch(/cnry_/i)
    await page.screenshot({ path: host.join(shots, 'console-incident.png'), fullPage: true })

    // Log out: the cookie is gone and the console asks for the secret again.
    await submit(page, '#logout')
    expect(new URL(page.url()).pathname).toBe('/admin/login')
    expect((await page.cookies()).filter((c) => c.name === 'guard_admin')).toEqual([])
    await page.goto(`${base}/admin/`)
    expect(new URL(page.url()).pathname).toBe('/admin/login')
    // The pages need no script and load nothing the CSP refuses.
    expect(violations).toEqual([])
    await page.close()
  }, 90_000)

  it('should refuse a cross-site form posting to the console', async () => {
    const page = await browser!.newPage()
    await page.goto(`${base}/admin/login`)
    await page.type('#secret', ADMIN)
    await submit(page, 'button[type=submit]')
    // A page on another origin auto-submitting the logout form: SameSite=Strict keeps the cookie off
    // it, and the token and origin checks would refuse it if it were sent.
    const evil = `data:text/html,<form id=f method=post action="${base}/admin/logout"><input name=_csrf value=x></form><script>f.submit()</script>`
    const other = await browser!.newPage()
    await other.goto(evil)
    await other.waitForNetworkIdle()
    expect(
      await other.evaluate(
        () => (globalThis as unknown as { document: DomDocument }).document.body.textContent,
      ),
    ).toMatch(/"code":"unauthorized"/)
    // Still logged in.
    await page.goto(`${base}/admin/`)
    expect(new URL(page.url()).pathname).toBe('/admin/')
    await other.close()
    await page.close()
  }, 30_000)

  it('should open the incident the demo causes, from the URL the demo prints, after logging in', async () => {
    const url = await causeIncidentOnWorker(base)
    expect(url).toMatch(new RegExp(`^${base}/admin/incidents/inc_[\\w-]+$`))
    // A fresh browser profile: no session from the tests before.
    const context = await browser!.createBrowserContext()
    const page = await context.newPage()
    await page.goto(url!)
    expect(new URL(page.url()).pathname).toBe('/admin/login')
    await page.type('#secret', ADMIN)
    await submit(page, 'button[type=submit]')
    // Back where the link pointed: the login keeps the path it was sent from.
    expect(page.url()).toBe(url)
    const detail = await text(page)
    expect(detail).toContain('Reasons and what to do next')
    expect(detail).toContain('tenant-b')
    expect(detail).not.toMatch(/cnry_/i)
    await context.close()
  }, 60_000)

  // At phone width the 720-unit charts were drawn at half scale: 11-unit labels painted at 5 px.
  // Every label a chart paints must be at least 10 CSS px and clear of its neighbours.
  for (const width of [390, 1280]) {
    it(`should paint every chart label readable and apart, ${width} px wide`, async () => {
      const context = await browser!.createBrowserContext()
      const page = await context.newPage()
      await page.setViewport({ width, height: 844, deviceScaleFactor: 2, isMobile: width < 640 })
      await page.setExtraHTTPHeaders({ authorization: `Bearer ${ADMIN}`, accept: 'text/html' })
      await page.goto(`${base}/admin/`)
      const labels = await page.evaluate(() => {
        interface Box {
          left: number
          right: number
          top: number
          bottom: number
          width: number
          height: number
        }
        interface Painted {
          textContent: string
          getClientRects(): { length: number }
          getBoundingClientRect(): Box
          ownerSVGElement: { dataset: Record<string, string>; getScreenCTM(): { a: number } } | null
        }
        const doc = globalThis as unknown as {
          document: { querySelectorAll(s: string): Iterable<Painted> }
          getComputedStyle(e: Painted): { fontSize: string; display: string; visibility: string }
        }
        const out: { chart: string; text: string; px: number; box: Box }[] = []
        for (const t of doc.document.querySelectorAll('svg.chart text')) {
          const style = doc.getComputedStyle(t)
          if (t.getClientRects().length === 0 || style.visibility === 'hidden') continue
          const svg = t.ownerSVGElement!
          const px = Number.parseFloat(style.fontSize) * svg.getScreenCTM().a
          const b = t.getBoundingClientRect()
          const box = {
            left: b.left,
            right: b.right,
            top: b.top,
            bottom: b.bottom,
            width: b.width,
            height: b.height,
          }
          out.push({ chart: svg.dataset.chart ?? '', text: t.textContent, px, box })
        }
        return out
      })
      expect(new Set(labels.map((l) => l.chart))).toEqual(new Set(['ttft', 'daily', 'refusals']))
      const small = labels
        .filter((l) => l.px < 10)
        .map((l) => `${l.chart} "${l.text}" ${l.px.toFixed(1)}px`)
      expect(small).toEqual([])
      const overlaps: string[] = []
      for (const [i, a] of labels.entries()) {
        for (const b of labels.slice(i + 1)) {
          if (a.chart !== b.chart) continue
          const w = Math.min(a.box.right, b.box.right) - Math.max(a.box.left, b.box.left)
          const h = Math.min(a.box.bottom, b.box.bottom) - Math.max(a.box.top, b.box.top)
          if (w > 1 && h > 1) overlaps.push(`${a.chart}: "${a.text}" / "${b.text}"`)
        }
      }
      expect(overlaps).toEqual([])
      await context.close()
    }, 30_000)
  }
})
