import type { PGlite, Results } from '@electric-sql/pglite';

type PgliteModule = typeof import('@electric-sql/pglite');

/**
 * The hot path's registered statements (prepared.ts) as named prepared statements on PGlite. Its `query` parses,
 * describes and plans the text again on every call, in six calls into the database; here a statement is parsed and
 * described once, and each call then binds, executes and syncs in one. Parameters are serialised and rows parsed by
 * PGlite's own serializers and parsers, as `query` does.
 */
export class PgliteStatements {
  /** Parameter type OIDs of each statement prepared on this database, by name. */
  private readonly paramTypes = new Map<string, number[]>();

  constructor(
    private readonly lite: PGlite,
    private readonly mod: PgliteModule,
  ) {}

  /** Runs outside any transaction: waits for an open one to end, as `query` does, and syncs the data folder after. */
  run<T>(name: string, text: string, params: readonly unknown[] | undefined): Promise<Results<T>> {
    return this.lite._runExclusiveTransaction(() => this.lite.runExclusive(() => this.execute<T>(name, text, params, true)));
  }

  /** Runs inside the transaction that holds the database now (PGlite's `transaction` callback). */
  runInTransaction<T>(name: string, text: string, params: readonly unknown[] | undefined): Promise<Results<T>> {
    return this.lite.runExclusive(() => this.execute<T>(name, text, params, false));
  }

  private async execute<T>(name: string, text: string, params: readonly unknown[] | undefined, syncToFs: boolean): Promise<Results<T>> {
    // PGlite's `query` checks this itself; its protocol calls on a closed database fail with a TypeError from inside.
    if (this.lite.closed) throw new Error('PGlite is closed');
    const { serialize } = this.mod.protocol;
    let types = this.paramTypes.get(name);
    if (!types) {
      // A named statement outlives the transaction it was parsed in, even one that rolls back.
      const described = await this.lite.execProtocol(concat([serialize.parse({ name, text, types: [] }), serialize.describe({ type: 'S', name }), serialize.sync()]), {
        syncToFs: false,
      });
      types = this.mod.parse.parseDescribeStatementResults(described.messages);
      this.paramTypes.set(name, types);
    }
    const values: (string | null)[] = [];
    if (params) {
      for (let i = 0; i < params.length; i++) {
        const v = params[i];
        if (v == null) {
          values.push(null);
          continue;
        }
        const serializer = this.lite.serializers[types[i]];
        values.push(serializer ? serializer(v) : String(v));
      }
    }
    const { messages } = await this.lite.execProtocol(
      concat([serialize.bind({ statement: name, values }), serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync()]),
      { syncToFs },
    );
    return this.mod.parse.parseResults(messages, this.lite.parsers)[0] as Results<T>;
  }
}

function concat(parts: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
