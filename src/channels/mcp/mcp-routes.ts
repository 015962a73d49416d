import AjvModule, { type ValidateFunction } from 'ajv';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { INTERNAL_CALL_HEADER } from '../../http/auth.js';
import { ApiError } from '../../http/errors.js';
import { VERSION } from '../../version.js';
import { HostGuard } from './host-guard.js';
import type { McpTool } from '../../platform/mcp-tool.js';

/**
 * The SDK, loaded at the first MCP request: it costs about a third of a second of CPU to load, which every daemon
 * start (and every CLI process) would otherwise pay for a server most deployments call rarely.
 */
let sdkLoading: Promise<McpSdk> | undefined;
type McpSdk = typeof import('@modelcontextprotocol/sdk/server/index.js') &
  typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js') &
  typeof import('@modelcontextprotocol/sdk/types.js');
function mcpSdk(): Promise<McpSdk> {
  sdkLoading ??= Promise.all([
    import('@modelcontextprotocol/sdk/server/index.js'),
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]).then(([server, transport, types]) => ({ ...server, ...transport, ...types }));
  return sdkLoading;
}

const Ajv = ((AjvModule as unknown as { default?: typeof AjvModule }).default ?? AjvModule) as unknown as typeof AjvModule.default;

export interface McpRoutesOptions {
  tools: readonly McpTool[];
  allowedHosts: readonly string[];
  allowedOrigins: readonly string[];
  publicUrl: string | null;
}

/** The envelope a REST call answered with. */
interface Envelope {
  success: boolean;
  code: string;
  message: string;
  data?: unknown;
  requestId?: string;
}

/**
 * A tool error (isError: true, so the agent sees it and can correct itself, as the MCP spec asks of tool execution
 * and argument errors): the text `CODE: message`, and structuredContent shaped like Ferry's error envelope, {code,
 * message, requestId, data?}, whether the REST route or the MCP layer refused (then requestId is the /mcp request's).
 */
function toolError(code: string, message: string, requestId: string | undefined, data?: unknown): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: `${code}: ${message}` }], structuredContent: { code, message, requestId, ...(data !== undefined ? { data } : {}) } };
}

/** The tools a request may see: those of the key's scopes, narrowed by `?products=` when given. */
function visibleTools(tools: readonly McpTool[], req: FastifyRequest): McpTool[] {
  const q = (req.query as { products?: string } | undefined)?.products;
  const products = q ? new Set(q.split(',').map((p) => p.trim()).filter(Boolean)) : null;
  return tools.filter((t) => req.auth.scopes.has(t.scope) && (!products || products.has(t.product)));
}

/**
 * The MCP server for AI agents at /mcp: Streamable HTTP from the official SDK in stateless mode (a fresh server and
 * transport per request, no session), so any instance answers any request. Authenticated by the API's keys (the auth
 * plugin, with its per-key rate limit), behind the DNS-rebinding guard. A tool call is the REST call it stands for,
 * made in-process with the caller's own credentials: same route, same validation, service, scopes, limits and request
 * logs; its error envelope becomes a tool error carrying Ferry's code and message.
 */
export async function mcpRoutes(app: FastifyInstance, opts: McpRoutesOptions): Promise<void> {
  const guard = new HostGuard(opts);
  // date-time is the one format tools use; the REST route checks it again with its own schema.
  const ajv = new Ajv({ allErrors: true, strict: false, formats: { 'date-time': (v: string) => /^\d{4}-\d{2}-\d{2}T/.test(v) && !Number.isNaN(Date.parse(v)) } });
  const validators = new Map<string, ValidateFunction>(opts.tools.map((t) => [t.name, ajv.compile(t.inputSchema)]));
  const names = new Set<string>();
  for (const t of opts.tools) {
    if (names.has(t.name)) throw new Error(`MCP tool ${t.name} is defined twice`);
    names.add(t.name);
  }

  const callTool = async (req: FastifyRequest, tool: McpTool, args: Record<string, unknown>): Promise<CallToolResult> => {
    const validate = validators.get(tool.name)!;
    if (!validate(args)) {
      const errors = (validate.errors ?? []).map((e) => ({ field: e.instancePath.replace(/^\//, '').replace(/\//g, '.') || String((e.params as { missingProperty?: string }).missingProperty ?? '(arguments)'), message: e.message ?? 'is not valid' }));
      return toolError('VALIDATION_ERROR', `The arguments are not valid: ${errors.map((e) => `${e.field} ${e.message}`).join('; ')}`, req.id, { errors });
    }
    const call = tool.request(args);
    // The caller was authenticated (and counted against its key's rate limit) once, by the /mcp request: the REST
    // call carries a one-time internal token for that caller instead of the credentials.
    const token = app.ferryInternalCalls.begin(req.auth);
    const headers: Record<string, string> = {
      'user-agent': `ferry-mcp/${VERSION} (${String(req.headers['user-agent'] ?? 'unknown client').slice(0, 200)})`,
      [INTERNAL_CALL_HEADER]: token,
    };
    if (call.idempotencyKey) headers['idempotency-key'] = call.idempotencyKey;
    if (call.body !== undefined) headers['content-type'] = 'application/json';
    let res: Awaited<ReturnType<FastifyInstance['inject']>>;
    try {
      res = await app.inject({
        method: call.method,
        url: call.url,
        headers,
        remoteAddress: req.clientIp,
        ...(call.body !== undefined ? { payload: JSON.stringify(call.body) } : {}),
      });
    } finally {
      app.ferryInternalCalls.end(token);
    }
    let env: Envelope;
    try {
      env = res.json<Envelope>();
    } catch {
      return toolError('INTERNAL_ERROR', 'Internal error', req.id);
    }
    if (!env.success) return toolError(env.code, env.message, env.requestId, env.data);
    const result = { code: env.code, message: env.message, requestId: env.requestId, data: env.data ?? null };
    return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result };
  };

  const mcpServer = (sdk: McpSdk, req: FastifyRequest): Server => {
    const { Server, ListToolsRequestSchema, CallToolRequestSchema, McpError, ErrorCode: McpErrorCode } = sdk;
    const server = new Server({ name: 'ferry', version: VERSION }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: visibleTools(opts.tools, req).map((t) => ({
        name: t.name,
        title: t.title,
        description: t.description,
        inputSchema: t.inputSchema,
        annotations: { title: t.title, ...t.annotations },
      })),
    }));
    server.setRequestHandler(CallToolRequestSchema, async (r) => {
      const tool = opts.tools.find((t) => t.name === r.params.name);
      if (!tool) throw new McpError(McpErrorCode.InvalidParams, `Unknown tool: ${r.params.name}`);
      if (!req.auth.scopes.has(tool.scope)) return toolError('INSUFFICIENT_SCOPE', `This API key lacks the scope ${tool.scope}`, req.id, { requiredScope: tool.scope });
      try {
        return await callTool(req, tool, (r.params.arguments ?? {}) as Record<string, unknown>);
      } catch (err) {
        req.log.error({ err, reqId: req.id, tool: tool.name }, 'MCP tool failed');
        return toolError('INTERNAL_ERROR', 'Internal error', req.id);
      }
    });
    return server;
  };

  app.post(
    '/mcp',
    {
      schema: { hide: true },
      config: {
        // Before authentication: a refused Host is no failed attempt, and costs no verification.
        preAuth: (req) => {
          if (!guard.hostAllowed(req.headers.host) || !guard.originAllowed(req.headers.origin)) {
            throw new ApiError('MCP_HOST_NOT_ALLOWED');
          }
        },
      },
    },
    async (req, reply) => {
      const sdk = await mcpSdk();
      const server = mcpServer(sdk, req);
      const transport = new sdk.StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      reply.hijack();
      reply.raw.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req.raw, reply.raw, req.body);
    },
  );
}
