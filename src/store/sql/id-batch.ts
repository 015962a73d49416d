/**
 * Bounds on `column` by the lowest and highest id of the array `param`: a table partitioned by id ranges (messages,
 * 0055) is pruned to the partitions between them, computed in SQL so in the column's own collation. An array
 * parameter alone prunes nothing, and the statement would probe every partition's index for every id.
 *
 * In a join with the batch (`m.id = u.id AND idBounds(...)`), give the bounds alone: with `m.id = ANY(param)` beside
 * them the planner, which cannot know the bounds, expects about one row from the table and joins by comparing every
 * id with every row (measured: three times the time of the submit record's update), where the join condition alone
 * makes it probe the primary key once per id.
 */
export function idBounds(column: string, param: string): string {
  return `${column} >= (SELECT min(x) FROM unnest(${param}::text[]) AS x) AND ${column} <= (SELECT max(x) FROM unnest(${param}::text[]) AS x)`;
}

/** `column = ANY(param)` over a batch of ids, with its bounds (idBounds): for a read of the batch's rows, not a join. */
export function idInBatch(column: string, param: string): string {
  return `${column} = ANY(${param}::text[]) AND ${idBounds(column, param)}`;
}
