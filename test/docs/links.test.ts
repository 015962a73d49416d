// Every relative link in README.md and docs/ resolves: the file exists, and a #fragment names a heading of it
// (GitHub's slugs: lower case, punctuation dropped, spaces to hyphens).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import t from 'tap';
import { packageRoot } from '../../src/util/paths.js';

export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, '')
    .replace(/[^\p{L}\p{N}\s-]/gu, '')
    .replace(/\s/g, '-');
}

function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const m = !fenced && /^#{1,6} (.+)$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

/** [text](target) links outside code, with their line numbers. */
function links(markdown: string): Array<{ target: string; line: number }> {
  const out: Array<{ target: string; line: number }> = [];
  let fenced = false;
  markdown.split('\n').forEach((text, i) => {
    if (text.startsWith('```')) fenced = !fenced;
    if (fenced) return;
    for (const m of text.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) out.push({ target: m[1], line: i + 1 });
  });
  return out;
}

const files = ['README.md', ...readdirSync(join(packageRoot, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

t.test('every relative link in README.md and docs/ resolves', async (t) => {
  t.ok(files.length > 5, `${files.length} files`);
  let checked = 0;
  for (const file of files) {
    const path = join(packageRoot, file);
    for (const { target, line } of links(readFileSync(path, 'utf8'))) {
      if (/^[a-z]+:/i.test(target)) continue; // http(s), mailto: not checked here
      const [p, fragment] = target.split('#');
      const dest = p ? resolve(dirname(path), p) : path;
      const where = `${file}:${line} → ${target}`;
      t.ok(dest.startsWith(packageRoot) && existsSync(dest), `${where}: ${relative(packageRoot, dest)} exists`);
      if (fragment && existsSync(dest) && statSync(dest).isFile() && dest.endsWith('.md')) {
        t.ok(anchors(readFileSync(dest, 'utf8')).has(fragment), `${where}: heading #${fragment} exists`);
      }
      checked++;
    }
  }
  t.ok(checked > 10, `${checked} links checked`);
});

t.test('the checker itself: a broken link and a missing heading are caught', async (t) => {
  t.equal(slug('Installing a release'), 'installing-a-release');
  t.equal(slug('The `ferry` CLI: admin API'), 'the-ferry-cli-admin-api');
  t.notOk(anchors('# A\n## B\n').has('c'));
  t.same(links('see [x](docs/none.md#y) and `[z](w)`'), [{ target: 'docs/none.md#y', line: 1 }]);
});
