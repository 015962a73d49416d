/** The redirect listener's few server-rendered pages: plain HTML, no JavaScript, no external assets. */

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

const STYLE = `body{font-family:system-ui,sans-serif;max-width:24rem;margin:4rem auto;padding:0 1rem;color:#222}
h1{font-size:1.25rem}label{display:block;margin:1rem 0 .25rem}input[type=password]{width:100%;padding:.5rem;font-size:1rem;box-sizing:border-box}
button{margin-top:1rem;padding:.5rem 1rem;font-size:1rem}.error{color:#b00020;margin-top:1rem}`;

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">` +
    `<meta name="robots" content="noindex"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>`;
}

export function passwordPage(opts: { slug: string; title: string | null; csrf: string; error: string | null }): string {
  const heading = opts.title ? escapeHtml(opts.title) : 'This link is protected';
  return page(
    'Password required',
    `<h1>${heading}</h1><p>Enter the password to continue.</p>` +
      `<form method="post" action="/${encodeURIComponent(opts.slug)}">` +
      `<input type="hidden" name="csrf" value="${escapeHtml(opts.csrf)}">` +
      `<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required autofocus>` +
      `<button type="submit">Continue</button>` +
      (opts.error ? `<p class="error" role="alert">${escapeHtml(opts.error)}</p>` : '') +
      `</form>`,
  );
}

export function messagePage(title: string, text: string): string {
  return page(title, `<h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p>`);
}
