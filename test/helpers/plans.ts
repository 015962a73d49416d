/** Reading Postgres' EXPLAIN (FORMAT JSON) output in tests that pin a statement's plan. */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

/** The tables a plan reads by sequential scan. */
export function seqScans(node: PlanNode, out: string[] = []): string[] {
  if (node['Node Type'] === 'Seq Scan' && node['Relation Name']) out.push(node['Relation Name']);
  for (const p of node.Plans ?? []) seqScans(p, out);
  return out;
}
