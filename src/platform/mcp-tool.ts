import type { Scope } from '../accounts/scopes.js';

/** The REST call a tool makes: the same route, so the same validation, service, scope check, limits and logs. */
export interface ToolRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The path with its query, under /v1 (path parameters already encoded). */
  url: string;
  body?: unknown;
  /** Sent as the Idempotency-Key header (tools that send take one). */
  idempotencyKey?: string;
}

/**
 * A tool of the MCP server (the mcp module, src/channels/mcp/mcp-routes.ts). A product contributes its tools with its module (`mcpTools` on the
 * module instance); each is a thin mapping of arguments onto the product's REST endpoint, so there is no second
 * implementation of any operation.
 */
export interface McpTool {
  name: string;
  /** The product it belongs to, for `/mcp?products=sms,otp`. */
  product: string;
  /** Listed and callable only for keys holding it (the scope of the REST endpoint it calls). */
  scope: Scope;
  title: string;
  description: string;
  /** JSON Schema of the arguments (an object); checked before the call. */
  inputSchema: { type: 'object'; properties: Record<string, unknown>; required?: string[]; additionalProperties?: boolean };
  annotations: { readOnlyHint: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean };
  request(args: Record<string, unknown>): ToolRequest;
}

/** The idempotency key argument every sending tool takes. */
export const idempotencyKeyArg = {
  type: 'string',
  minLength: 1,
  maxLength: 255,
  description: 'Idempotency-Key: a retry with the same key and arguments returns the first answer instead of sending again',
} as const;

/** A query string of the defined arguments among `names`. */
export function query(args: Record<string, unknown>, names: readonly string[]): string {
  const q = new URLSearchParams();
  for (const n of names) if (args[n] !== undefined && args[n] !== null) q.set(n, String(args[n]));
  const s = q.toString();
  return s ? `?${s}` : '';
}
