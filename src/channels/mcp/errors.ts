import type { ModuleErrors } from '../../http/errors.js';

/** The MCP server's own codes (the tools answer with the codes of the REST endpoints they call). */
export const MCP_ERRORS = {
  MCP_HOST_NOT_ALLOWED: { status: 403, message: 'The Host or Origin header is not allowed for /mcp (DNS-rebinding guard; see mcp.allowedHosts)' },
} as const satisfies ModuleErrors;

// Its codes type-check where it throws them (an augmentation, so the core imports nothing of the product).
declare module '../../http/errors.js' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ProductErrorCodes extends Record<keyof typeof MCP_ERRORS, true> {}
}
