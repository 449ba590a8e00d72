import { isAppError } from '../../domain/errors.js';
import { listContainers, type ContainersView } from '../../operations/containers/list-containers.js';
import { listDmRooms } from '../../operations/containers/dm-rooms.js';
import type { OpContext } from '../../operations/context.js';
import { listMessages } from '../../operations/messages/messages.js';
import { runOperation } from '../../operations/operation.js';
import type { MessageView } from '../../operations/views.js';
import { messageList } from './format.js';
import { INVALID_PARAMS, RESOURCE_NOT_FOUND, RpcError, type Params } from './jsonrpc.js';

/**
 * Resources: every channel, topic and DM room the bot reaches, at a stable URI
 * (`workroom://channels/<id>`, `workroom://topics/<id>`, `workroom://dm-rooms/<id>`); reading one gives
 * its recent messages in the same text as read_messages.
 */
const KINDS = {
  channels: { field: 'channel_id', label: 'channel' },
  topics: { field: 'topic_id', label: 'topic' },
  'dm-rooms': { field: 'dm_room_id', label: 'DM room' },
} as const;
const URI_RE = /^workroom:\/\/(channels|topics|dm-rooms)\/([0-9a-fA-F-]{36})$/;
const READ_LIMIT = 20;
const MIME = 'text/plain';

export async function listResources(ctx: OpContext) {
  const c = (await runOperation(listContainers, ctx, { type: 'all' })) as ContainersView;
  const dms = (await runOperation(listDmRooms, ctx, {})) as {
    items: { id: string; members: { type: string; id: string }[] }[];
  };
  const projectNames = new Map((c.projects ?? []).map((p) => [p.id, p.name]));
  return {
    resources: [
      ...(c.channels ?? []).map((ch) => ({
        uri: `workroom://channels/${ch.id}`,
        name: `#${ch.name}`,
        description:
          ch.description ||
          `Recent messages of the ${ch.is_private ? 'private' : 'public'} channel #${ch.name}`,
        mimeType: MIME,
      })),
      ...(c.topics ?? []).map((t) => ({
        uri: `workroom://topics/${t.id}`,
        name: `${projectNames.get(t.project_id) ?? 'project'} / ${t.name}`,
        description: `Recent messages of the topic ${t.name}`,
        mimeType: MIME,
      })),
      ...dms.items.map((d) => ({
        uri: `workroom://dm-rooms/${d.id}`,
        name: `DM room ${d.id.slice(0, 8)}`,
        description: `Recent messages of the DM room with ${d.members.map((m) => `${m.type} ${m.id}`).join(', ')}`,
        mimeType: MIME,
      })),
    ],
  };
}

export async function readResource(ctx: OpContext, params: Params | undefined) {
  const uri = params?.uri;
  if (typeof uri !== 'string')
    throw new RpcError(INVALID_PARAMS, 'Invalid params: uri must be a string', { field: 'uri' });
  const m = URI_RE.exec(uri);
  if (!m) throw new RpcError(RESOURCE_NOT_FOUND, `Resource not found: ${uri.slice(0, 200)}`, { uri });
  const kind = KINDS[m[1] as keyof typeof KINDS];
  try {
    const r = (await runOperation(listMessages, ctx, {
      [kind.field]: m[2]!.toLowerCase(),
      limit: READ_LIMIT,
    })) as {
      items: MessageView[];
    };
    return { contents: [{ uri, mimeType: MIME, text: messageList(`${kind.label} ${m[2]}`, r.items) }] };
  } catch (err) {
    if (isAppError(err) && (err.code === 'not_found' || err.code === 'invalid_input'))
      throw new RpcError(RESOURCE_NOT_FOUND, `Resource not found: ${uri}`, { uri });
    throw err;
  }
}

export const RESOURCE_TEMPLATES_JSON = JSON.stringify({
  resourceTemplates: Object.entries(KINDS).map(([path, k]) => ({
    uriTemplate: `workroom://${path}/{${k.field}}`,
    name: `Messages of a ${k.label}`,
    description: `The ${READ_LIMIT} most recent messages of a ${k.label} the bot is a member of`,
    mimeType: MIME,
  })),
});
