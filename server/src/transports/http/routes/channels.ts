import {
  addChannelMember,
  archiveChannel,
  createChannel,
  getChannel,
  listChannelMembers,
  listChannelsRest,
  removeChannelMember,
  updateChannel,
} from '../../../operations/containers/channels.js';
import { listContainers } from '../../../operations/containers/list-containers.js';
import type { Route } from '../types.js';

/** Channels and their members, and the listing of every container a caller can reach. */
export const channelRoutes: Route[] = [
  { method: 'POST', path: '/api/channels', op: createChannel, status: 201, tags: ['channels'] },
  { method: 'GET', path: '/api/channels', op: listChannelsRest, tags: ['channels'] },
  { method: 'GET', path: '/api/channels/{channelId}', op: getChannel, tags: ['channels'] },
  { method: 'PATCH', path: '/api/channels/{channelId}', op: updateChannel, tags: ['channels'] },
  { method: 'POST', path: '/api/channels/{channelId}/archive', op: archiveChannel, tags: ['channels'] },
  {
    method: 'POST',
    path: '/api/channels/{channelId}/members',
    op: addChannelMember,
    status: 201,
    tags: ['channels'],
  },
  { method: 'GET', path: '/api/channels/{channelId}/members', op: listChannelMembers, tags: ['channels'] },
  {
    method: 'DELETE',
    path: '/api/channels/{channelId}/members/users/{userId}',
    op: removeChannelMember,
    tags: ['channels'],
  },
  {
    method: 'DELETE',
    path: '/api/channels/{channelId}/members/bots/{botId}',
    op: removeChannelMember,
    tags: ['channels'],
  },
  { method: 'GET', path: '/api/containers', op: listContainers, tags: ['channels'] },
];
