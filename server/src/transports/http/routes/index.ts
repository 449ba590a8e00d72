import { buildOpenApi } from '../openapi.js';
import type { McpEndpoint } from '../../mcp/http.js';
import type { Route } from '../types.js';
import { botApiRoutes } from './bot-api.js';
import { botPlatformRoutes } from './bot-platform.js';
import { botRoutes } from './bots.js';
import { commandResponseRoutes } from './command-responses.js';
import { coreRoutes } from './core.js';
import { deliveryRoutes } from './deliveries.js';
import { departmentRoutes } from './departments.js';
import { mcpRoutes } from './mcp.js';
import { readMarkerRoutes } from './read-markers.js';
import { taskRoutes } from './tasks.js';
import { webhookRoutes } from './webhooks.js';

/** Every HTTP route of the server. Each module is a thin adapter over operations. */
export function allRoutes(publicUrl: string, mcp: McpEndpoint): Route[] {
  const routes: Route[] = [
    ...coreRoutes,
    ...botRoutes,
    ...botApiRoutes,
    ...botPlatformRoutes,
    ...commandResponseRoutes,
    ...taskRoutes,
    ...webhookRoutes,
    ...deliveryRoutes,
    ...departmentRoutes,
    ...readMarkerRoutes,
    ...mcpRoutes(mcp),
  ];
  let doc: string | undefined;
  routes.push({
    method: 'GET',
    path: '/api/openapi.json',
    auth: 'none',
    tags: ['system'],
    async handle(rc) {
      doc ??= JSON.stringify(buildOpenApi(routes, publicUrl));
      rc.res.writeHead(200, {
        'content-type': 'application/json; charset=utf-8',
        'cache-control': 'public, max-age=60',
      });
      rc.res.end(doc);
    },
  });
  return routes;
}
