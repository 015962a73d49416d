// A small PromQL reader for the dashboard test: not a full parser, just enough to name every metric an expression
// selects, the labels it matches or groups on, and which function each selector sits in. promtool, where installed,
// checks the full syntax; this reader checks what promtool cannot know: that the names exist in Ferry.

/** Aggregation operators: `sum by (a) (…)` and `sum (…) by (a)`. */
const AGGREGATORS = new Set(['sum', 'min', 'max', 'avg', 'group', 'stddev', 'stdvar', 'count', 'count_values', 'bottomk', 'topk', 'quantile', 'limitk', 'limit_ratio']);

/** Functions taking a range vector (`x[5m]`) as their selector argument. */
const RANGE_FUNCTIONS = new Set([
  'rate', 'irate', 'increase', 'delta', 'idelta', 'deriv', 'predict_linear', 'changes', 'resets', 'holt_winters', 'absent_over_time', 'present_over_time',
  'avg_over_time', 'min_over_time', 'max_over_time', 'sum_over_time', 'count_over_time', 'quantile_over_time', 'stddev_over_time', 'stdvar_over_time', 'last_over_time', 'mad_over_time',
]);

/** Functions whose selector must be a counter (or a histogram's _bucket/_sum/_count, which are counters too). */
export const COUNTER_FUNCTIONS = new Set(['rate', 'irate', 'increase', 'resets']);

const FUNCTIONS = new Set([
  ...RANGE_FUNCTIONS, 'abs', 'absent', 'ceil', 'clamp', 'clamp_max', 'clamp_min', 'day_of_month', 'day_of_week', 'day_of_year', 'days_in_month', 'exp', 'floor',
  'histogram_quantile', 'histogram_count', 'histogram_sum', 'histogram_fraction', 'hour', 'label_join', 'label_replace', 'ln', 'log2', 'log10', 'minute', 'month',
  'round', 'scalar', 'sgn', 'sort', 'sort_desc', 'sqrt', 'time', 'timestamp', 'vector', 'year',
]);

/** Words that are neither metrics nor labels (binary operators and modifiers). `by`, `on`, … are read with their list. */
const KEYWORDS = new Set(['and', 'or', 'unless', 'atan2', 'bool', 'offset', 'Inf', 'NaN', 'inf', 'nan']);
const GROUPING = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);

/** One vector selector: `metric{label="…"}[range]`. */
export interface Selector {
  metric: string;
  /** Label names its matchers use. */
  labels: string[];
  hasRange: boolean;
  /** The functions and aggregations it sits in, innermost first. */
  within: string[];
}

/** A `by (…)`, `without (…)`, `on (…)`, … list and the metrics it applies to. */
export interface Grouping {
  keyword: string;
  labels: string[];
  metrics: string[];
}

export interface ParsedQuery {
  selectors: Selector[];
  groupings: Grouping[];
  /** What the reader could not make sense of: an unknown function, unbalanced brackets, a bad range. */
  errors: string[];
}

type TokenKind = 'ident' | 'number' | 'string' | 'range' | 'var' | 'punct';
interface Token {
  kind: TokenKind;
  text: string;
}

/** A range or subquery: `[5m]`, `[$__rate_interval]`, `[1h:5m]`. */
const SPAN = String.raw`(?:(?:\d+(?:ms|[smhdwy]))+|\$\{?\w+\}?)`;
const RANGE_BODY = new RegExp(`^${SPAN}(?::${SPAN}?)?$`);

function tokenize(expr: string, errors: string[]): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < expr.length) {
    const c = expr[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === '#') {
      while (i < expr.length && expr[i] !== '\n') i++;
    } else if (c === '"' || c === "'" || c === '`') {
      let j = i + 1;
      while (j < expr.length && expr[j] !== c) j += expr[j] === '\\' && c !== '`' ? 2 : 1;
      if (j >= expr.length) errors.push(`unterminated string at ${i}`);
      tokens.push({ kind: 'string', text: expr.slice(i + 1, j) });
      i = j + 1;
    } else if (c === '[') {
      const j = expr.indexOf(']', i);
      if (j < 0) {
        errors.push(`unterminated range at ${i}`);
        break;
      }
      const body = expr.slice(i + 1, j);
      if (!RANGE_BODY.test(body.replace(/\s+/g, ''))) errors.push(`bad range [${body}]`);
      tokens.push({ kind: 'range', text: body });
      i = j + 1;
    } else if (c === '$') {
      const m = /^\$(\{\w+\}|\w+)/.exec(expr.slice(i));
      if (!m) {
        errors.push(`stray $ at ${i}`);
        i++;
        continue;
      }
      tokens.push({ kind: 'var', text: m[0] });
      i += m[0].length;
    } else if (/[0-9.]/.test(c)) {
      const m = /^(0x[0-9a-fA-F]+|(\d+(ms|[smhdwy]))+|\d*\.?\d+([eE][+-]?\d+)?)/.exec(expr.slice(i));
      const text = m?.[0] || c;
      tokens.push({ kind: 'number', text });
      i += text.length;
    } else if (/[a-zA-Z_:]/.test(c)) {
      const m = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(expr.slice(i))!;
      tokens.push({ kind: 'ident', text: m[0] });
      i += m[0].length;
    } else {
      const m = /^(=~|!~|!=|==|<=|>=|[-+*/%^<>=(){},@])/.exec(expr.slice(i));
      if (!m) {
        errors.push(`unexpected ${JSON.stringify(c)} at ${i}`);
        i++;
        continue;
      }
      tokens.push({ kind: 'punct', text: m[0] });
      i += m[0].length;
    }
  }
  return tokens;
}

/** Index of the bracket closing the one at `open`, or -1. */
function closing(tokens: Token[], open: number): number {
  const o = tokens[open].text;
  const c = o === '(' ? ')' : '}';
  let depth = 0;
  for (let i = open; i < tokens.length; i++) {
    if (tokens[i].kind !== 'punct') continue;
    if (tokens[i].text === o) depth++;
    else if (tokens[i].text === c && --depth === 0) return i;
  }
  return -1;
}

/** Reads `( a, b )` at `open`; returns the names and the index after `)`. */
function labelList(tokens: Token[], open: number, errors: string[]): { labels: string[]; next: number } {
  const end = closing(tokens, open);
  if (end < 0) {
    errors.push('unclosed label list');
    return { labels: [], next: tokens.length };
  }
  const labels: string[] = [];
  for (let i = open + 1; i < end; i++) {
    const tk = tokens[i];
    if (tk.kind === 'ident') labels.push(tk.text);
    else if (!(tk.kind === 'punct' && tk.text === ',')) errors.push(`unexpected ${tk.text} in a label list`);
  }
  return { labels, next: end + 1 };
}

/** Reads one PromQL expression (Grafana variables allowed where Grafana puts them). */
export function parseQuery(expr: string): ParsedQuery {
  const errors: string[] = [];
  const tokens = tokenize(expr, errors);
  const selectors: Array<Selector & { at: number }> = [];
  const groupings: Array<{ keyword: string; labels: string[]; from: number; to: number }> = [];
  /** Open parentheses: the function or aggregation each belongs to ('' for plain grouping). */
  const frames: Array<{ fn: string; at: number }> = [];
  let pendingFn = '';

  for (let i = 0; i < tokens.length; i++) {
    const tk = tokens[i];
    const next = tokens[i + 1];
    if (tk.kind === 'punct' && tk.text === '(') {
      frames.push({ fn: pendingFn, at: i });
      pendingFn = '';
      continue;
    }
    if (tk.kind === 'punct' && tk.text === ')') {
      if (!frames.pop()) errors.push('unbalanced )');
      continue;
    }
    if (tk.kind === 'punct' && tk.text === '{') {
      // A selector with no name in front: only `{__name__="…"}` names a metric.
      const end = closing(tokens, i);
      const m = readMatchers(tokens, i, end, errors);
      const named = m.nameEquals;
      if (!named) errors.push('a selector without a metric name');
      else selectors.push({ metric: named, labels: m.labels, hasRange: tokens[end + 1]?.kind === 'range', within: frames.map((f) => f.fn).filter(Boolean).reverse(), at: i });
      i = end;
      continue;
    }
    if (tk.kind === 'range' && tokens[i - 1]?.kind === 'punct' && tokens[i - 1].text === ')') {
      continue; // a subquery: (expr)[1h:5m]
    }
    if (tk.kind !== 'ident') continue;

    if (GROUPING.has(tk.text)) {
      const isList = next?.kind === 'punct' && next.text === '(';
      if (!isList) {
        if (tk.text !== 'group_left' && tk.text !== 'group_right') errors.push(`${tk.text} without a label list`);
        continue;
      }
      const { labels, next: after } = labelList(tokens, i + 1, errors);
      let from = 0;
      let to = tokens.length;
      if (tk.text === 'by' || tk.text === 'without') {
        const prev = tokens[i - 1];
        if (prev?.kind === 'ident' && AGGREGATORS.has(prev.text)) {
          // sum by (…) (argument)
          from = after;
          to = tokens[after]?.text === '(' ? closing(tokens, after) : -1;
          pendingFn = prev.text;
        } else if (prev?.kind === 'punct' && prev.text === ')') {
          // sum (argument) by (…): the argument ends just before the keyword
          to = i - 1;
          from = openingOf(tokens, to);
        } else {
          errors.push(`${tk.text} (…) not after an aggregation`);
        }
        if (from < 0 || to < 0) errors.push(`${tk.text} (…) without an argument`);
      }
      groupings.push({ keyword: tk.text, labels, from, to });
      i = after - 1;
      continue;
    }
    if (KEYWORDS.has(tk.text)) continue;
    if (next?.kind === 'punct' && next.text === '(') {
      if (AGGREGATORS.has(tk.text) || FUNCTIONS.has(tk.text)) pendingFn = tk.text;
      else errors.push(`unknown function ${tk.text}`);
      continue;
    }
    if (AGGREGATORS.has(tk.text) && next?.kind === 'ident' && (next.text === 'by' || next.text === 'without')) continue;

    // A metric name, with its matchers and range if any.
    let labels: string[] = [];
    let end = i;
    if (next?.kind === 'punct' && next.text === '{') {
      end = closing(tokens, i + 1);
      if (end < 0) {
        errors.push(`unclosed matchers after ${tk.text}`);
        break;
      }
      labels = readMatchers(tokens, i + 1, end, errors).labels;
    }
    const hasRange = tokens[end + 1]?.kind === 'range';
    selectors.push({ metric: tk.text, labels, hasRange, within: frames.map((f) => f.fn).filter(Boolean).reverse(), at: i });
    i = end;
  }
  if (frames.length) errors.push('unbalanced (');

  for (const s of selectors) {
    const inner = s.within[0];
    const directlyInRangeFn = inner !== undefined && RANGE_FUNCTIONS.has(inner);
    if (directlyInRangeFn && !s.hasRange) errors.push(`${inner}(${s.metric}) needs a range [ … ]`);
    if (s.hasRange && !directlyInRangeFn) errors.push(`${s.metric}[…] outside a range function`);
  }
  return {
    selectors: selectors.map(({ at: _at, ...s }) => s),
    groupings: groupings.map((g) => ({ keyword: g.keyword, labels: g.labels, metrics: selectors.filter((s) => s.at >= g.from && s.at <= g.to).map((s) => s.metric) })),
    errors,
  };
}

function openingOf(tokens: Token[], close: number): number {
  let depth = 0;
  for (let i = close; i >= 0; i--) {
    if (tokens[i].kind !== 'punct') continue;
    if (tokens[i].text === ')') depth++;
    else if (tokens[i].text === '(' && --depth === 0) return i;
  }
  return -1;
}

/** `{a="x", b=~"y"}` between `open` and `end`: the label names, and the metric name if `__name__="…"`. */
function readMatchers(tokens: Token[], open: number, end: number, errors: string[]): { labels: string[]; nameEquals: string | null } {
  const labels: string[] = [];
  let nameEquals: string | null = null;
  for (let i = open + 1; i < end; i++) {
    const name = tokens[i];
    if (name.kind === 'punct' && name.text === ',') continue;
    const op = tokens[i + 1];
    const value = tokens[i + 2];
    if (name.kind !== 'ident' || op?.kind !== 'punct' || !['=', '!=', '=~', '!~'].includes(op.text) || value?.kind !== 'string') {
      errors.push(`bad matcher near ${name.text}`);
      return { labels, nameEquals };
    }
    if (name.text === '__name__') {
      if (op.text === '=') nameEquals = value.text;
    } else {
      labels.push(name.text);
    }
    i += 2;
  }
  return { labels, nameEquals };
}

/**
 * A Grafana query variable: `label_values(selector, label)`, `label_values(label)` or `query_result(expr)`. Returns
 * the expression to check and the label it reads (on every metric of that expression).
 */
export function parseVariableQuery(query: string): { expr: string | null; label: string | null; error: string | null } {
  const lv = /^\s*label_values\(\s*(.*?)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$/s.exec(query);
  if (lv) return { expr: lv[1], label: lv[2], error: null };
  const bare = /^\s*label_values\(\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$/.exec(query);
  if (bare) return { expr: null, label: bare[1], error: null };
  const qr = /^\s*query_result\((.*)\)\s*$/s.exec(query);
  if (qr) return { expr: qr[1], label: null, error: null };
  return { expr: null, label: null, error: `a variable query this test does not read: ${query}` };
}
