import { createHash } from 'node:crypto';
import type { Services } from '../context.js';
import { outsideRequest, write } from '../write.js';

/** What identifies an MCP session id in the outbox: its SHA-256 (the id itself is never stored). */
export function mcpSessionHash(sessionId: string): string {
  return createHash('sha256').update(sessionId).digest('hex');
}

/**
 * Tells every instance that an MCP session ended (DELETE, or a cap made room): an internal outbox
 * event (`mcp.session_ended`, never offered to webhooks), so the instances that adopted the session
 * answer its id 404 too, as soon as they read the outbox. The MCP transport's session store calls it.
 */
export async function announceMcpSessionEnded(
  services: Services,
  session: { id: string; botId: string; orgId: string; expiresAt: number },
): Promise<void> {
  await write(outsideRequest(services), (tx) => {
    tx.emit('mcp.session_ended', session.orgId, {
      bot_id: session.botId,
      session_hash: mcpSessionHash(session.id),
      expires_at: new Date(session.expiresAt).toISOString(),
    });
    return Promise.resolve();
  });
}
