/**
 * @module The console's page frame: header, navigation, logout form.
 */
import { html } from 'hono/html'
import type { HtmlEscapedString } from 'hono/utils/html'
import { CSRF_FIELD } from '../auth'
import { STYLE_PATH } from '../style'

/** Rendered HTML, as hono/html's tagged template returns it. */
export type Html = HtmlEscapedString | Promise<HtmlEscapedString>

/** Which page is current, for the navigation. */
type Section = 'overview' | 'incidents' | 'none'

/**
 * A whole console page. `csrf` is the session's token (the logout form carries it); a bearer request
 * has no session and gets no logout button.
 *
 * @example
 * layout({ title: 'Incidents', section: 'incidents', csrf, body: html`<p>…</p>` })
 */
export function layout(page: { title: string; section: Section; csrf?: string; body: Html }): Html {
  const current = (s: Section) => (s === page.section ? 'page' : undefined)
  return html`${head(page.title)}
<header class="top">
<a class="brand" href="/admin/">workers-ai-guard</a>
<a href="/admin/" aria-current="${current('overview')}">Overview</a>
<a href="/admin/incidents" aria-current="${current('incidents')}">Incidents</a>
${
  page.csrf
    ? html`<form method="post" action="/admin/logout"><input type="hidden" name="${CSRF_FIELD}" value="${page.csrf}"><button type="submit" id="logout">Log out</button></form>`
    : ''
}
</header>
<main>
<h1>${page.title}</h1>
${page.body}
</main>
</body>
</html>`
}

/**
 * The login page (no session yet, so no navigation).
 *
 * @example
 * loginPage({ error: 'Wrong secret.', next: '/admin/incidents' })
 */
export function loginPage(options: { error?: string; next?: string }): Html {
  return html`${head('Log in')}
<form class="login" method="post" action="/admin/login">
<h1>workers-ai-guard console</h1>
<p class="muted">Log in with the Worker's ADMIN_SECRET. The session lasts 8 hours.</p>
${options.error ? html`<p class="error" role="alert">${options.error}</p>` : ''}
<label for="secret">Admin secret</label>
<input id="secret" name="secret" type="password" autocomplete="current-password" required autofocus>
<input type="hidden" name="next" value="${options.next ?? '/admin/'}">
<p><button class="primary" type="submit">Log in</button></p>
</form>
</body>
</html>`
}

/** The document's start, up to and including `<body>`: one stylesheet, no referrer, no script. */
function head(title: string): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title} · workers-ai-guard</title>
<link rel="stylesheet" href="${STYLE_PATH}">
</head>
<body>`
}
