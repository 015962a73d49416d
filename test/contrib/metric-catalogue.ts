// What a Prometheus scraping Ferry can query: the families of a /metrics exposition, their labels as Prometheus stores
// them, and the check of one dashboard query against them.
import { COUNTER_FUNCTIONS, parseQuery, parseVariableQuery } from './promql.js';

export interface Family {
  name: string;
  /** counter, gauge, histogram, summary or untyped, from the `# TYPE` line. */
  type: string;
  /** Label names as exposed: seen on a sample, or declared by the metric (labelled metrics print no sample until used). */
  labels: Set<string>;
  /** Whether the exposition held at least one sample of it. */
  sampled: boolean;
}

/** Labels Prometheus attaches to every series of a target (its default `honor_labels: false`). */
export const TARGET_LABELS = ['job', 'instance'];

/**
 * Series Prometheus writes itself for each target, so no /metrics shows them. `up` is the instance health an operator
 * reads first; nothing else of the kind is allowed.
 */
export const SCRAPE_SERIES: Record<string, string> = {
  up: 'written by Prometheus for every target on every scrape: 1 when the scrape succeeded',
};

const SUFFIXES = ['_bucket', '_sum', '_count'] as const;

export class MetricCatalogue {
  constructor(readonly families: Map<string, Family>) {}

  /** Families from an exposition; `declared` adds each metric's own label names (the registry's `labelNames`). */
  static fromExposition(text: string, declared: Map<string, readonly string[]> = new Map()): MetricCatalogue {
    const families = new Map<string, Family>();
    for (const line of text.split('\n')) {
      const type = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\w+)$/.exec(line);
      if (type) families.set(type[1], { name: type[1], type: type[2], labels: new Set(declared.get(type[1]) ?? []), sampled: false });
    }
    const catalogue = new MetricCatalogue(families);
    for (const line of text.split('\n')) {
      if (!line || line.startsWith('#')) continue;
      const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s/.exec(line);
      if (!sample) continue;
      const found = catalogue.resolve(sample[1]);
      if (!found) continue;
      found.family.sampled = true;
      for (const m of (sample[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"/g)) {
        // `le` and `quantile` belong to the _bucket and summary samples; labelsOf adds them where they apply.
        if (m[1] !== 'le' && m[1] !== 'quantile') found.family.labels.add(m[1]);
      }
    }
    return catalogue;
  }

  /** The family a series name belongs to: itself, or a histogram's (summary's) _bucket, _sum or _count. */
  resolve(series: string): { family: Family; suffix: '' | (typeof SUFFIXES)[number] } | null {
    const direct = this.families.get(series);
    if (direct) return { family: direct, suffix: '' };
    for (const suffix of SUFFIXES) {
      if (!series.endsWith(suffix)) continue;
      const base = this.families.get(series.slice(0, -suffix.length));
      if (base?.type === 'histogram' || (base?.type === 'summary' && suffix !== '_bucket')) return { family: base, suffix };
    }
    return null;
  }

  /** Label names a series carries once scraped, or null when the series does not exist. */
  labelsOf(series: string): Set<string> | null {
    if (SCRAPE_SERIES[series]) return new Set(TARGET_LABELS);
    const found = this.resolve(series);
    if (!found) return null;
    const labels = new Set<string>(TARGET_LABELS);
    for (const l of found.family.labels) labels.add(TARGET_LABELS.includes(l) ? `exported_${l}` : l);
    if (found.suffix === '_bucket') labels.add('le');
    if (found.family.type === 'summary' && found.suffix === '') labels.add('quantile');
    return labels;
  }

  /** Whether rate() and increase() apply: counters, and the _bucket/_sum/_count of histograms and summaries. */
  isCounterSeries(series: string): boolean {
    const found = this.resolve(series);
    return !!found && (found.family.type === 'counter' || found.suffix !== '');
  }
}

/** Every problem of one query against the catalogue: parse errors, unknown series, unknown labels, misused types. */
export function checkQuery(expr: string, catalogue: MetricCatalogue): string[] {
  const parsed = parseQuery(expr);
  const problems = [...parsed.errors];
  if (!parsed.selectors.length) problems.push('selects no metric');
  for (const s of parsed.selectors) {
    const labels = catalogue.labelsOf(s.metric);
    if (!labels) {
      problems.push(`${s.metric}: no such metric on /metrics`);
      continue;
    }
    for (const l of s.labels) if (!labels.has(l)) problems.push(`${s.metric}{${l}=…}: no such label (has ${[...labels].sort().join(', ')})`);
    if (SCRAPE_SERIES[s.metric]) continue;
    const counterFn = s.within.find((f) => COUNTER_FUNCTIONS.has(f));
    const isCounter = catalogue.isCounterSeries(s.metric);
    if (s.within[0] && COUNTER_FUNCTIONS.has(s.within[0]) && !isCounter) problems.push(`${s.within[0]}(${s.metric}): not a counter`);
    if (isCounter && !counterFn) problems.push(`${s.metric}: a counter read without rate(), irate() or increase()`);
    if (s.metric.endsWith('_bucket') && !s.within.includes('histogram_quantile')) problems.push(`${s.metric}: buckets outside histogram_quantile()`);
  }
  for (const g of parsed.groupings) {
    if (!g.metrics.length) problems.push(`${g.keyword} (${g.labels.join(', ')}) applies to no metric`);
    for (const m of g.metrics) {
      const labels = catalogue.labelsOf(m);
      if (!labels) continue; // reported above
      for (const l of g.labels) if (!labels.has(l)) problems.push(`${g.keyword} (${l}): ${m} has no label ${l}`);
    }
  }
  return problems;
}

/** The problems of a Grafana query variable (`label_values(selector, label)`, …). */
export function checkVariableQuery(query: string, catalogue: MetricCatalogue): string[] {
  const v = parseVariableQuery(query);
  if (v.error) return [v.error];
  if (!v.expr) return v.label && TARGET_LABELS.includes(v.label) ? [] : [`label_values(${v.label}) without a metric: name one`];
  // A variable reads series, not rates: only the names and labels matter here.
  const parsed = parseQuery(v.expr);
  const problems = [...parsed.errors];
  for (const s of parsed.selectors) {
    const labels = catalogue.labelsOf(s.metric);
    if (!labels) {
      problems.push(`${s.metric}: no such metric on /metrics`);
      continue;
    }
    for (const l of [...s.labels, ...(v.label ? [v.label] : [])]) if (!labels.has(l)) problems.push(`${s.metric}: no label ${l}`);
  }
  return problems;
}
