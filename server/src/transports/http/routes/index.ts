import { buildOpenApi } from '../openapi.js';
import type { McpEndpoint } from '../../mcp/http.js';
import type { Route } from '../types.js';
import { authRoutes } from './auth.js';
import { bookmarkRoutes } from './bookmarks.js';
import { botPlatformRoutes } from './bot-platform.js';
import { botRoutes } from './bots.js';
import { channelRoutes } from './channels.js';
import { commandRoutes } from './commands.js';
import { deliveryRoutes } from './deliveries.js';
import { departmentRoutes } from './departments.js';
import { dmRoomRoutes } from './dm-rooms.js';
import { fileRoutes } from './files.js';
import { mcpRoutes } from './mcp.js';
import { mentionRoutes } from './mentions.js';
import { messageRoutes } from './messages.js';
import { notificationRoutes } from './notifications.js';
import { organizationRoutes } from './organizations.js';
import { pendingActionRoutes } from './pending-actions.js';
import { projectRoutes } from './projects.js';
import { readMarkerRoutes } from './read-markers.js';
import { searchRoutes } from './search.js';
import { systemRoutes } from './system.js';
import { taskRoutes } from './tasks.js';
import { userRoutes } from './users.js';
import { webhookRoutes } from './webhooks.js';

/** Every HTTP route of the server. Each module is a thin adapter over operations. */
export function allRoutes(publicUrl: () => string, mcp: McpEndpoint): Route[] {
  // One file per resource (as Mattermost's api4/<resource>.go), in the order of the OpenAPI document.
  const routes: Route[] = [
    ...systemRoutes,
    ...authRoutes,
    ...organizationRoutes,
    ...userRoutes,
    ...departmentRoutes,
    ...channelRoutes,
    ...projectRoutes,
    ...dmRoomRoutes,
    ...messageRoutes,
    ...readMarkerRoutes,
    ...taskRoutes,
    ...bookmarkRoutes,
    ...fileRoutes,
    ...searchRoutes,
    ...mentionRoutes,
    ...commandRoutes,
    ...botRoutes,
    ...botPlatformRoutes,
    ...deliveryRoutes,
    ...webhookRoutes,
    ...notificationRoutes,
    ...pendingActionRoutes,
    ...mcpRoutes(mcp),
  ];
  let doc: string | undefined;
  routes.push({
    method: 'GET',
    path: '/api/openapi.json',
    auth: 'none',
    tags: ['system'],
    async handle(rc) {
      doc ??= JSON.stringify(buildOpenApi(routes, publicUrl()));
      rc.res.writeHead(200, {
        'content-type': 'application/json; charset=utf-8',
        'cache-control': 'public, max-age=60',
      });
      rc.res.end(doc);
    },
  });
  return routes;
}
