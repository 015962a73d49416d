/*
 * The hot path's statements, run as named prepared statements on Postgres: each connection parses one once and then
 * only binds and executes it, and Postgres may keep its plan, instead of parsing and planning the large batch
 * statements again on every batch. Only texts registered here are named, so the set is fixed and small; a registered
 * statement lists its output columns (no top-level `*`), so a migration that adds a column while another instance
 * runs cannot change the result type under its cached plan. On PGlite the same names are prepared once per database
 * (pglite-statements.ts).
 */
const names = new Map<string, string>();

/** Registers a statement text for preparing and returns it unchanged: `const SQL = prepared(\`…\`)`. */
export function prepared(text: string): string {
  if (!names.has(text)) names.set(text, 'ferry_' + names.size.toString(36));
  return text;
}

/** The statement name of a registered text, else undefined (run unnamed). */
export function preparedName(text: string): string | undefined {
  return names.get(text);
}

/** Every registered text (the plan test checks each one's generic plan). */
export function preparedTexts(): string[] {
  return [...names.keys()];
}

/**
 * A hot-path statement over a batch of ledger ids (`id = ANY($1)`), deliberately left unnamed: Postgres then plans
 * each run with the batch's ids in hand and reads only the partitions of messages that hold them (0055). A kept
 * generic plan cannot prune by an array parameter and probes every partition's index for every id; bounds by the
 * batch's lowest (and highest) id, which let it prune, are read by the planner as a narrow range of a few rows and
 * lead it to read the whole range, or to compare every id of the batch with every row it found (both measured).
 */
export function plannedPerBatch(text: string): string {
  return text;
}
