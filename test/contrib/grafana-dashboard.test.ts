// The Grafana dashboard (contrib/grafana/ferry.json) against the code: every metric and label its queries use must be
// on /metrics of a running daemon, on this backend, and every metric the daemon exposes must be on the dashboard or
// named below with the reason it is not. A metric renamed in src/ fails here instead of leaving an empty panel.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { packageRoot } from '../../src/util/paths.js';
import { call, startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { backendLabel } from '../helpers/env.js';
import { until } from '../helpers/wait.js';
import { CustomerClient } from '../smpp/customer/customer-client.js';
import { checkQuery, checkVariableQuery, MetricCatalogue, SCRAPE_SERIES } from './metric-catalogue.js';
import { parseQuery, parseVariableQuery } from './promql.js';

const DASHBOARD_FILE = join(packageRoot, 'contrib/grafana/ferry.json');

const ROWS = ['Overview', 'SMPP upstreams', 'SMPP customers', 'Accounts', 'Queues & back-pressure', 'Webhooks & outbound', 'REST API & errors', 'Products', 'Process'];

/** Variables Grafana defines itself. */
const GRAFANA_VARIABLES = new Set(['__rate_interval', '__interval', '__range', '__interval_ms', '__range_s']);

/**
 * Metrics on /metrics that the dashboard deliberately leaves out, with why. A new metric in src/ fails the coverage
 * check until it is added to a panel or here.
 */
const NOT_ON_DASHBOARD: Record<string, string> = {
  ferry_otp_conversion_ratio: 'counts since the process started; the OTP conversion panel divides the two counters over the window instead',
  ferry_db_vacuums_total: 'the number of runs says little; the table maintenance panel shows the time they take (ferry_db_vacuum_seconds_total)',
};
/** prom-client's default metrics: the Process row shows the ones an operator reads (CPU, memory, lag, GC, fds, uptime). */
const DEFAULT_METRIC_PREFIXES = ['ferry_process_', 'ferry_nodejs_'];

interface Panel {
  id: number;
  type: string;
  title?: string;
  description?: string;
  datasource?: { type?: string; uid?: string };
  gridPos: { h: number; w: number; x: number; y: number };
  targets?: Array<{ expr?: string; refId?: string; datasource?: { type?: string; uid?: string } }>;
  panels?: Panel[];
}
interface Variable {
  name: string;
  type: string;
  query?: string | { query?: string };
  datasource?: { uid?: string };
}
interface Dashboard {
  uid: string;
  title: string;
  schemaVersion: number;
  panels: Panel[];
  templating: { list: Variable[] };
}

function loadDashboard(): Dashboard {
  return JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')) as Dashboard;
}

/** Every panel, those inside collapsed rows included. */
function allPanels(d: Dashboard): Panel[] {
  return d.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
}

/** Every query of the dashboard, with where it is. */
function panelQueries(d: Dashboard): Array<{ where: string; expr: string }> {
  return allPanels(d).flatMap((p) => (p.targets ?? []).map((tg) => ({ where: `panel ${p.id} "${p.title}" ${tg.refId}`, expr: tg.expr ?? '' })));
}

function variableQueries(d: Dashboard): Array<{ where: string; query: string }> {
  return d.templating.list
    .filter((v) => v.type === 'query')
    .map((v) => ({ where: `variable $${v.name}`, query: typeof v.query === 'string' ? v.query : (v.query?.query ?? '') }));
}

t.test('the dashboard JSON: valid, ids unique, every panel titled, described and on the datasource variable', async (t) => {
  const d = loadDashboard();
  t.ok(d.schemaVersion >= 36 && d.schemaVersion <= 41, `schemaVersion ${d.schemaVersion} is one Grafana 10/11 imports`);
  t.ok(d.uid && d.title, 'uid and title');
  const panels = allPanels(d);
  const ids = panels.map((p) => p.id);
  t.ok(ids.every((id) => Number.isInteger(id)), 'every panel has an integer id');
  t.same(ids.filter((id, i) => ids.indexOf(id) !== i), [], 'panel ids are unique');
  t.same(
    panels.filter((p) => p.type === 'row').map((p) => p.title),
    ROWS,
    'the rows, in order',
  );

  const ds = d.templating.list.find((v) => v.name === 'datasource');
  t.match(ds, { type: 'datasource', query: 'prometheus' }, 'a Prometheus datasource variable');
  const names = new Set(d.templating.list.map((v) => v.name));
  for (const v of ['job', 'instance']) t.ok(names.has(v), `variable $${v}`);

  const faults: string[] = [];
  for (const p of panels.filter((p) => p.type !== 'row')) {
    const where = `panel ${p.id} "${p.title}"`;
    if (!p.title?.trim()) faults.push(`${where}: no title`);
    if (!p.description?.trim()) faults.push(`${where}: no description`);
    if (p.datasource?.uid !== '${datasource}') faults.push(`${where}: datasource is not \${datasource}`);
    if (!p.targets?.length) faults.push(`${where}: no query`);
    const refIds = (p.targets ?? []).map((tg) => tg.refId);
    if (new Set(refIds).size !== refIds.length) faults.push(`${where}: refIds repeat`);
    for (const tg of p.targets ?? []) {
      if (!tg.expr?.trim()) faults.push(`${where} ${tg.refId}: empty expr`);
      if (tg.datasource?.uid !== '${datasource}') faults.push(`${where} ${tg.refId}: datasource is not \${datasource}`);
    }
    const g = p.gridPos;
    if (!(g.w > 0 && g.h > 0 && g.x >= 0 && g.x + g.w <= 24)) faults.push(`${where}: gridPos ${JSON.stringify(g)} outside the 24 columns`);
  }
  // Overlapping panels are pushed about by Grafana on import: the layout would not be the one written here.
  for (const [i, a] of panels.entries()) {
    for (const b of panels.slice(i + 1)) {
      const A = a.gridPos;
      const B = b.gridPos;
      if (A.x < B.x + B.w && B.x < A.x + A.w && A.y < B.y + B.h && B.y < A.y + A.h) faults.push(`panels ${a.id} and ${b.id} overlap`);
    }
  }
  for (const q of [...panelQueries(d).map((x) => x.expr), ...variableQueries(d).map((x) => x.query)]) {
    for (const m of q.matchAll(/\$\{?(\w+)\}?/g)) if (!names.has(m[1]) && !GRAFANA_VARIABLES.has(m[1])) faults.push(`$${m[1]} is not a dashboard variable: ${q}`);
  }
  t.same(faults, [], 'no faults');
  t.ok(panelQueries(d).length >= 60, `${panelQueries(d).length} queries`);
});

// A synthetic exposition, to prove the check reports what it must (and accepts what it should).
const FAKE_EXPOSITION = `# HELP ferry_x_total x
# TYPE ferry_x_total counter
ferry_x_total{upstream="a",job="cleanup"} 1
# HELP ferry_h h
# TYPE ferry_h histogram
ferry_h_bucket{le="1",route="/v1"} 1
ferry_h_bucket{le="+Inf",route="/v1"} 1
ferry_h_sum{route="/v1"} 0.5
ferry_h_count{route="/v1"} 1
# HELP ferry_g g
# TYPE ferry_g gauge
ferry_g 3
# HELP ferry_unused u
# TYPE ferry_unused counter
`;

t.test('the extractor names the metrics, not the functions, keywords, labels or durations', async (t) => {
  const q = parseQuery(
    'histogram_quantile(0.9, sum by (le, upstream) (rate(ferry_a_bucket{upstream=~"$upstream", status!="x"}[$__rate_interval]))) ' +
      '/ on (instance) group_left (version) max by (instance, version) (ferry_info offset 5m) and ferry_b > bool 0 ' +
      'or sum(increase(ferry_c_total[1h:5m])) without (bind) + time() - count({__name__="ferry_d"}) * vector(1e3)',
  );
  t.same(q.errors, [], 'no parse errors');
  t.same(
    q.selectors.map((s) => s.metric),
    ['ferry_a_bucket', 'ferry_info', 'ferry_b', 'ferry_c_total', 'ferry_d'],
    'exactly the metrics',
  );
  t.same(q.selectors[0].labels, ['upstream', 'status'], 'matcher labels');
  t.same(q.selectors[0].within, ['rate', 'sum', 'histogram_quantile'], 'its enclosing functions, innermost first');
  t.same(
    q.groupings.map((g) => [g.keyword, g.labels, g.metrics]),
    [
      ['by', ['le', 'upstream'], ['ferry_a_bucket']],
      ['on', ['instance'], ['ferry_a_bucket', 'ferry_info', 'ferry_b', 'ferry_c_total', 'ferry_d']],
      ['group_left', ['version'], ['ferry_a_bucket', 'ferry_info', 'ferry_b', 'ferry_c_total', 'ferry_d']],
      ['by', ['instance', 'version'], ['ferry_info']],
      ['without', ['bind'], ['ferry_c_total']],
    ],
    'each label list with the metrics it applies to',
  );
  t.match(parseQuery('sum(rat(ferry_x_total[5m]))').errors, [/unknown function rat/], 'a misspelt function');
  t.match(parseQuery('sum(rate(ferry_x_total[5m])').errors, [/unbalanced \(/], 'an unclosed parenthesis');
  t.match(parseQuery('rate(ferry_x_total)').errors, [/needs a range/], 'rate() without a range');
  t.match(parseQuery('rate(ferry_x_total[5x])').errors, [/bad range/], 'a bad duration');
});

t.test('the check fails on a made-up metric, a missing label and a misused type', async (t) => {
  const c = MetricCatalogue.fromExposition(FAKE_EXPOSITION);
  t.match(checkQuery('sum(rate(ferry_made_up_total[5m]))', c), [/ferry_made_up_total: no such metric/], 'a made-up metric is reported missing');
  t.match(checkQuery('sum by (account) (rate(ferry_x_total[5m]))', c), [/by \(account\): ferry_x_total has no label account/], 'a made-up label in by()');
  t.match(checkQuery('rate(ferry_x_total{account="a"}[5m])', c), [/ferry_x_total\{account=…\}: no such label/], 'a made-up label in a matcher');
  t.match(checkQuery('rate(ferry_g[5m])', c), [/rate\(ferry_g\): not a counter/], 'rate() of a gauge');
  t.match(checkQuery('ferry_x_total', c), [/read without rate/], 'a raw counter');
  t.match(checkQuery('sum by (le) (ferry_h_bucket)', c), [/ferry_h_bucket: a counter read without rate/, /buckets outside histogram_quantile/], 'raw buckets');
  t.match(checkQuery('sum(rate(ferry_h_total[5m]))', c), [/ferry_h_total: no such metric/], 'a histogram has no _total');
  t.match(checkQuery('sum(rate(ferry_g_bucket[5m]))', c), [/ferry_g_bucket: no such metric/], 'a gauge has no buckets');
  t.match(checkQuery('sum by (le) (rate(ferry_x_total[5m]))', c), [/has no label le/], 'le only on buckets');
  t.match(checkQuery('sum by (job) (rate(ferry_x_total[5m])) + sum by (bogus) (ferry_g)', c), [/has no label bogus/], 'only the wrong one');

  const fine = [
    'histogram_quantile(0.99, sum by (le, route) (rate(ferry_h_bucket{route=~"$route"}[$__rate_interval])))',
    'sum(rate(ferry_x_total{upstream=~"$upstream", instance=~"$instance"}[$__rate_interval])) by (upstream)',
    'sum by (exported_job, job) (increase(ferry_x_total[5m]))',
    'sum by (route) (rate(ferry_h_count[5m])) / sum by (route) (rate(ferry_h_sum[5m]))',
    'max(ferry_g) and on (instance, job) up{job=~"$job"}',
  ];
  for (const q of fine) t.same(checkQuery(q, c), [], `accepted: ${q}`);
  t.same(checkVariableQuery('label_values(ferry_x_total{job=~"$job"}, upstream)', c), [], 'a variable query');
  t.match(checkVariableQuery('label_values(ferry_x_total, account)', c), [/no label account/], 'a variable on a missing label');
  t.match(checkVariableQuery('label_values(ferry_nope, instance)', c), [/ferry_nope: no such metric/], 'a variable on a missing metric');
});

/** A little traffic, so labelled series have samples: REST sends, a failed login, an SMPP submit and its receipt. */
async function driveTraffic(t: Test, d: TestDaemon): Promise<string> {
  const account = await d.adminCall('POST', '/admin/accounts', { name: 'dash', defaultCountry: 'GH', smppPassword: 'pw123456' });
  const key = await d.adminCall('POST', '/admin/keys', { account: 'dash', scopes: 'all' });
  for (let i = 0; i < 3; i++) {
    const r = await call(d.api, 'POST', '/v1/sms/send', { token: key.token, body: { to: '0241234567', from: 'Dash', message: `dashboard ${i}` } });
    t.equal(r.status, 200, `REST send ${i}`);
  }
  const refused = await call(d.api, 'GET', '/v1/health', { token: Buffer.from('ak_live_nobody:nothing').toString('base64') });
  t.equal(refused.status, 401, 'a refused login');
  const port = Number(d.daemon.addresses.smpp.split(':').pop());
  const { client, resp } = await CustomerClient.bound(port, 'transceiver', account.smpp.systemId, 'pw123456');
  t.teardown(() => client.close());
  t.equal(resp.command_status, 0, 'a customer binds');
  const submit = await client.request('submit_sm', { source_addr: 'Dash', destination_addr: '233241234568', short_message: 'dashboard smpp', registered_delivery: 1 });
  t.equal(submit.command_status, 0, 'a customer submit');
  await client.next((p) => p.command === 'deliver_sm', 30_000);
  await until(
    async () => (await call(d.admin, 'GET', '/metrics')).text,
    (text) => /^ferry_upstream_receipts_total\{/m.test(text) && /^ferry_smpp_customer_deliveries_total\{/m.test(text) && /^ferry_account_messages_final_total\{/m.test(text),
    30_000,
  );
  return account.id as string;
}

t.test(`every metric and label the dashboard queries is on /metrics (${backendLabel})`, async (t) => {
  const d = await startDaemon();
  t.teardown(() => d.stop());
  const accountId = await driveTraffic(t, d);

  const text = (await call(d.admin, 'GET', '/metrics')).text;
  // Per account: the three REST sends and the SMPP submit accepted, the SMPP one delivered (its receipt came).
  t.match(text, new RegExp(`^ferry_account_messages_accepted_total\\{account="${accountId}"\\} 4$`, 'm'), 'messages accepted, counted per account');
  t.match(text, new RegExp(`^ferry_account_messages_final_total\\{account="${accountId}",status="delivered"\\} [1-4]$`, 'm'), 'final statuses, counted per account');
  // A labelled metric prints its # TYPE line but no sample until used: its declared label names stand in for them.
  // (prom-client's metric objects carry `labelNames`; its MetricObject type does not say so.)
  const registered = d.daemon.metrics.registry.getMetricsAsArray() as unknown as Array<{ name: string; labelNames?: readonly string[] }>;
  const catalogue = MetricCatalogue.fromExposition(text, new Map(registered.map((m) => [m.name, m.labelNames ?? []])));
  t.ok(catalogue.families.size > 50, `${catalogue.families.size} metric families on /metrics`);

  const dashboard = loadDashboard();
  const problems: string[] = [];
  const used = new Set<string>();
  for (const { where, expr } of panelQueries(dashboard)) {
    for (const p of checkQuery(expr, catalogue)) problems.push(`${where}: ${p}\n    ${expr}`);
    for (const s of parseQuery(expr).selectors) used.add(catalogue.resolve(s.metric)?.family.name ?? s.metric);
  }
  for (const { where, query } of variableQueries(dashboard)) {
    for (const p of checkVariableQuery(query, catalogue)) problems.push(`${where}: ${p}\n    ${query}`);
    const expr = parseVariableQuery(query).expr;
    if (expr) for (const s of parseQuery(expr).selectors) used.add(s.metric);
  }
  t.same(problems, [], 'every query names metrics and labels this daemon exposes');

  const unsampled = [...used].filter((m) => catalogue.families.get(m) && !catalogue.families.get(m)!.sampled);
  t.comment(`${used.size} metrics queried; ${unsampled.length} without samples here, their labels checked against their declarations: ${unsampled.join(', ')}`);
  t.same([...used].filter((m) => !catalogue.families.has(m) && !SCRAPE_SERIES[m]), [], 'nothing queried outside /metrics but the scrape series');

  const notShown = [...catalogue.families.keys()].filter(
    (m) => !used.has(m) && !NOT_ON_DASHBOARD[m] && !DEFAULT_METRIC_PREFIXES.some((p) => m.startsWith(p)),
  );
  t.same(notShown, [], 'every Ferry metric is on the dashboard or listed in NOT_ON_DASHBOARD with a reason');
  t.same(
    Object.keys(NOT_ON_DASHBOARD).filter((m) => !catalogue.families.has(m)),
    [],
    'NOT_ON_DASHBOARD names only metrics that exist',
  );

  // The same check on the real catalogue sees a renamed metric and a label the metric lacks.
  const first = panelQueries(dashboard).find((q) => q.expr.includes('ferry_upstream_submits_total{'))!;
  t.match(checkQuery(first.expr.replace('ferry_upstream_submits_total', 'ferry_upstream_submitz_total'), catalogue), [/ferry_upstream_submitz_total: no such metric/], 'a renamed metric fails');
  t.match(checkQuery('sum by (account) (rate(ferry_upstream_submits_total[5m]))', catalogue), [/no label account/], 'a label the metric lacks fails');
});

/** Whether promtool (Debian package prometheus) is installed. */
function havePromtool(): boolean {
  return spawnSync('promtool', ['--version'], { stdio: 'ignore' }).status === 0;
}

t.test('promtool parses every query', { skip: havePromtool() ? false : 'promtool not installed (Debian package prometheus): PromQL syntax not checked by Prometheus' }, async (t) => {
  const d = loadDashboard();
  // Grafana's interval variables become a duration, the others a regex matching everything, as Grafana's "All" does.
  const expand = (q: string): string => q.replace(/\$\{?(\w+)\}?/g, (_m, name: string) => (GRAFANA_VARIABLES.has(name) ? '5m' : '.*'));
  const exprs = [
    ...panelQueries(d).map((q) => q.expr),
    ...variableQueries(d).flatMap((v) => {
      const e = parseVariableQuery(v.query).expr;
      return e ? [e] : [];
    }),
  ];
  const rules = { groups: [{ name: 'dashboard', rules: exprs.map((e, i) => ({ record: `dashboard:query_${i}`, expr: expand(e) })) }] };
  const file = join(t.testdir(), 'rules.yml');
  writeFileSync(file, JSON.stringify(rules, null, 2)); // JSON is YAML
  let out = '';
  let ok = true;
  try {
    out = execFileSync('promtool', ['check', 'rules', file], { encoding: 'utf8', timeout: 60_000, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    ok = false;
    const err = e as { stdout?: string; stderr?: string };
    out = `${err.stdout ?? ''}${err.stderr ?? ''}`;
  }
  t.ok(ok, `promtool accepts all ${exprs.length} queries`, { diagnostic: !ok, output: out });
});
