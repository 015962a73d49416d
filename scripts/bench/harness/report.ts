/** The one table a scenario prints (Markdown, ready for the README), its JSON line, and number formatting. */
import type { Percentiles } from './stats.js';

export interface Row {
  figure: string;
  value: string;
  target?: string;
  verdict?: string;
}

export const fmt = {
  int: (n: number): string => (Number.isFinite(n) ? Math.round(n).toLocaleString('en') : '—'),
  rate: (n: number, unit = 'msg/s'): string => (Number.isFinite(n) ? `${Math.round(n).toLocaleString('en')} ${unit}` : '—'),
  ms: (n: number): string => (!Number.isFinite(n) ? '—' : n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : Math.round(n).toLocaleString('en')),
  cpu: (n: number): string => (Number.isFinite(n) ? n.toFixed(3) : '—'),
  mb: (bytes: number | undefined): string => (bytes !== undefined && Number.isFinite(bytes) ? `${Math.round(bytes / 2 ** 20)}` : '—'),
  /** machineLoad's result: "1.86 of 2 cores busy (93%), 4.1% stolen". */
  load: (l: { coresBusy: number; busyPct: number; stealPct: number } | undefined, cores: number): string =>
    l ? `${l.coresBusy.toFixed(2)} of ${cores} cores busy (${Math.round(l.busyPct)}%), ${l.stealPct.toFixed(1)}% stolen` : '—',
  latency: (p: Percentiles): string =>
    p.count ? `${fmt.ms(p.p50)} / ${fmt.ms(p.p95)} / ${fmt.ms(p.p99)} / ${fmt.ms(p.max)} ms` : '—',
};

/** 'meets target' / 'below target', or '' when the figure was not measured under the target's conditions. */
export function verdict(ok: boolean | undefined): string {
  if (ok === undefined) return '';
  return ok ? 'meets target' : '**below target**';
}

export function printTable(heading: string, meta: string[], rows: Row[]): void {
  const lines: string[] = [];
  lines.push('', heading, '');
  for (const m of meta) lines.push(m);
  lines.push('');
  const header = ['figure', 'value', 'target', ''];
  const body = rows.map((r) => [r.figure, r.value, r.target ?? '', r.verdict ?? '']);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  lines.push(line(header));
  lines.push(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const b of body) lines.push(line(b));
  lines.push('');
  process.stdout.write(lines.join('\n') + '\n');
}

/** Rounds every number in a result to something readable before it goes on the JSON line. */
export function tidy(value: unknown): unknown {
  if (typeof value === 'number') return Number.isFinite(value) ? (Number.isInteger(value) ? value : Math.round(value * 1000) / 1000) : null;
  if (Array.isArray(value)) return value.map(tidy);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, tidy(v)]));
  return value;
}

export function printJson(result: Record<string, unknown>): void {
  process.stdout.write(JSON.stringify(tidy(result)) + '\n');
}
