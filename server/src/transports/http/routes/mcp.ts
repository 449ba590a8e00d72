import { listToolCalls } from '../../../operations/audit/tool-calls.js';
import type { McpEndpoint } from '../../mcp/http.js';
import type { Route } from '../types.js';

const doc = (summary: string) => ({
  summary,
  description:
    'MCP 2025-03-26 over Streamable HTTP (JSON-RPC 2.0). Authenticate with `Authorization: Bearer <bot API key>`; user tokens answer 401. See docs/MCP.md.',
  security: [{ bearer: [] }],
});

/**
 * The MCP tool server. Mounted with auth 'none' because it authenticates bot keys itself: a user token
 * must answer 401 (not the REST 403), with a JSON-RPC body.
 */
export const mcpRoutes = (mcp: McpEndpoint): Route[] => [
  {
    method: 'POST',
    path: '/api/mcp',
    auth: 'none',
    tags: ['mcp'],
    handle: (rc) => mcp.post(rc),
    doc: doc('Send JSON-RPC messages (a message or a batch) to the MCP tool server'),
  },
  {
    method: 'GET',
    path: '/api/mcp',
    auth: 'none',
    tags: ['mcp'],
    handle: (rc) => mcp.get(rc),
    doc: doc('Open the SSE stream of server messages of an MCP session (Mcp-Session-Id, Last-Event-ID)'),
  },
  {
    method: 'DELETE',
    path: '/api/mcp',
    auth: 'none',
    tags: ['mcp'],
    handle: (rc) => mcp.delete(rc),
    doc: doc('End an MCP session'),
  },
  { method: 'GET', path: '/api/bots/{botId}/tool-calls', op: listToolCalls, tags: ['bots'] },
];
