import type { Db, Queryable } from '../../src/store/types.js';

/** Reading Postgres' EXPLAIN (FORMAT JSON) output in tests that pin a statement's plan. */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Plans?: PlanNode[];
}

/** The top node of one EXPLAIN (FORMAT JSON) result (a JSON string on some drivers, parsed on others). */
export const planOf = (raw: unknown): PlanNode => ((typeof raw === 'string' ? JSON.parse(raw) : raw) as Array<{ Plan: PlanNode }>)[0].Plan;

/** The indexes a plan reads, in plan order. */
export function indexes(node: PlanNode, out: string[] = []): string[] {
  if (node['Index Name']) out.push(node['Index Name']);
  for (const p of node.Plans ?? []) indexes(p, out);
  return out;
}

/** The tables a plan reads by sequential scan. */
export function seqScans(node: PlanNode, out: string[] = []): string[] {
  if (node['Node Type'] === 'Seq Scan' && node['Relation Name']) out.push(node['Relation Name']);
  for (const p of node.Plans ?? []) seqScans(p, out);
  return out;
}

/** A statement as a test's recording database saw it. */
export interface Recorded {
  text: string;
  params: readonly unknown[];
}

/** The same database, with every statement sent through it (pool or transaction) written down. */
export function recording(db: Db, log: Recorded[]): Db {
  const wrap = (q: Queryable): Queryable => ({
    query: (text, params = []) => {
      log.push({ text, params });
      return q.query(text, params);
    },
  });
  return {
    kind: db.kind,
    query: wrap(db).query,
    tx: (fn) => db.tx((q) => fn({ ...wrap(q), commitNow: () => q.commitNow() })),
    ping: () => db.ping(),
    close: () => db.close(),
  };
}

/**
 * The index reads of a plan, with their conditions: a batch statement must reach each row by its key (`id = …`),
 * never by a range that holds every row between the batch's lowest and highest id.
 */
export function indexReads(node: PlanNode, out: Array<{ relation: string; index: string; cond: string }> = []): Array<{ relation: string; index: string; cond: string }> {
  if (node['Index Name']) out.push({ relation: node['Relation Name'] ?? '', index: node['Index Name'], cond: node['Index Cond'] ?? '' });
  for (const p of node.Plans ?? []) indexReads(p, out);
  return out;
}

/**
 * Each relation or index name as the statement names it: a partition's (or a partition's index's) root, itself when
 * not a partition. Plans of a partitioned table name its partitions and their own indexes.
 */
export async function roots(db: Queryable, names: readonly string[]): Promise<string[]> {
  if (!names.length) return [];
  const { rows } = await db.query<{ name: string; root: string }>(
    `SELECT n AS name, coalesce(pg_partition_root(to_regclass(n))::regclass::text, n) AS root FROM unnest($1::text[]) AS n`,
    [names],
  );
  const root = new Map(rows.map((r) => [r.name, r.root]));
  return names.map((n) => root.get(n) ?? n);
}
