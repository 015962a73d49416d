/** The `mcp` section of the config (one part of the one JSON schema, src/config/schema.ts). */
export const mcpConfigSchema = {
  type: 'object',
  additionalProperties: false,
  default: {},
  properties: {
    enabled: { type: 'boolean', default: true, description: 'serve the MCP server for AI agents at /mcp' },
    allowedHosts: {
      type: 'string',
      default: '',
      description: 'comma-separated Host header names (with or without a port) /mcp answers besides localhost, 127.0.0.1, [::1] and the host of http.publicUrl (DNS-rebinding guard)',
    },
    allowedOrigins: {
      type: 'string',
      default: '',
      description: 'comma-separated Origin header values /mcp accepts besides those of the allowed hosts (browsers send one; most agents none)',
    },
  },
} as const;

export interface McpConfig {
  enabled: boolean;
  allowedHosts: string;
  allowedOrigins: string;
}

/** A comma-separated list as its items. */
export function listOf(value: string): string[] {
  return value.split(',').map((s) => s.trim()).filter(Boolean);
}
