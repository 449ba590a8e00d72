import { z } from 'zod';
import { login, LoginInput, LoginOutput, logout, me } from '../../../operations/auth/session.js';
import { parseInput } from '../../../operations/operation.js';
import { createOrganization, listOrganizations } from '../../../operations/orgs/organizations.js';
import { createUser, getUser, listUsers, updateUser } from '../../../operations/users/users.js';
import {
  addChannelMember,
  createChannel,
  getChannel,
  listChannelMembers,
  listChannelsRest,
  removeChannelMember,
  updateChannel,
} from '../../../operations/containers/channels.js';
import {
  addProjectMember,
  removeProjectMember,
  createProject,
  createTopic,
  getProject,
  listProjects,
  listTopics,
} from '../../../operations/containers/projects.js';
import { createDmRoom, listDmRooms } from '../../../operations/containers/dm-rooms.js';
import { listMessages, sendMessage } from '../../../operations/messages/messages.js';
import { clientAddress, readJsonObject, sendJson } from '../io.js';
import type { Route } from '../types.js';

/** Health, sessions, and the management endpoints of decisions.md. */
export const coreRoutes: Route[] = [
  {
    method: 'GET',
    path: '/api/health',
    auth: 'none',
    tags: ['system'],
    doc: {
      summary: 'Whether the server and its database are up',
      responses: { 200: { description: 'ok' }, 503: { description: 'database unreachable' } },
    },
    async handle(rc) {
      const database = await rc.services.storage.ping();
      sendJson(rc.res, database ? 200 : 503, {
        status: database ? 'ok' : 'unavailable',
        database: database ? 'ok' : 'unreachable',
        dialect: rc.services.storage.dialect,
      });
    },
  },
  {
    method: 'POST',
    path: '/api/auth/login',
    auth: 'none',
    tags: ['auth'],
    doc: {
      summary: 'Sign in with email and password; answers a bearer token',
      requestBody: {
        required: true,
        content: { 'application/json': { schema: z.toJSONSchema(LoginInput, { io: 'input' }) } },
      },
      responses: {
        200: {
          description: 'Signed in',
          content: { 'application/json': { schema: z.toJSONSchema(LoginOutput) } },
        },
      },
    },
    async handle(rc) {
      const { maxBodyBytes, http } = rc.services.config;
      const input = parseInput(LoginInput, await readJsonObject(rc.req, maxBodyBytes, http.bodyTimeoutMs));
      sendJson(
        rc.res,
        200,
        await login(rc.services, input, clientAddress(rc.req, rc.services.config.http.trustProxy)),
      );
    },
  },
  { method: 'POST', path: '/api/auth/logout', op: logout, tags: ['auth'] },
  { method: 'GET', path: '/api/auth/me', op: me, tags: ['auth'] },

  {
    method: 'POST',
    path: '/api/organizations',
    op: createOrganization,
    status: 201,
    tags: ['organizations'],
  },
  { method: 'GET', path: '/api/organizations', op: listOrganizations, tags: ['organizations'] },

  { method: 'POST', path: '/api/users', op: createUser, status: 201, tags: ['users'] },
  { method: 'GET', path: '/api/users', op: listUsers, tags: ['users'] },
  { method: 'GET', path: '/api/users/{userId}', op: getUser, tags: ['users'] },
  { method: 'PATCH', path: '/api/users/{userId}', op: updateUser, tags: ['users'] },

  { method: 'POST', path: '/api/channels', op: createChannel, status: 201, tags: ['channels'] },
  { method: 'GET', path: '/api/channels', op: listChannelsRest, tags: ['channels'] },
  { method: 'GET', path: '/api/channels/{channelId}', op: getChannel, tags: ['channels'] },
  { method: 'PATCH', path: '/api/channels/{channelId}', op: updateChannel, tags: ['channels'] },
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

  { method: 'POST', path: '/api/projects', op: createProject, status: 201, tags: ['projects'] },
  { method: 'GET', path: '/api/projects', op: listProjects, tags: ['projects'] },
  { method: 'GET', path: '/api/projects/{projectId}', op: getProject, tags: ['projects'] },
  {
    method: 'POST',
    path: '/api/projects/{projectId}/members',
    op: addProjectMember,
    status: 201,
    tags: ['projects'],
  },
  {
    method: 'DELETE',
    path: '/api/projects/{projectId}/members/users/{userId}',
    op: removeProjectMember,
    tags: ['projects'],
  },
  {
    method: 'DELETE',
    path: '/api/projects/{projectId}/members/bots/{botId}',
    op: removeProjectMember,
    tags: ['projects'],
  },
  {
    method: 'POST',
    path: '/api/projects/{projectId}/topics',
    op: createTopic,
    status: 201,
    tags: ['projects'],
  },
  { method: 'GET', path: '/api/projects/{projectId}/topics', op: listTopics, tags: ['projects'] },

  { method: 'POST', path: '/api/dm-rooms', op: createDmRoom, status: 201, tags: ['dm-rooms'] },
  { method: 'GET', path: '/api/dm-rooms', op: listDmRooms, tags: ['dm-rooms'] },

  {
    method: 'POST',
    path: '/api/channels/{channelId}/messages',
    op: sendMessage,
    status: 201,
    idempotent: true,
    tags: ['messages'],
  },
  { method: 'GET', path: '/api/channels/{channelId}/messages', op: listMessages, tags: ['messages'] },
  {
    method: 'POST',
    path: '/api/topics/{topicId}/messages',
    op: sendMessage,
    status: 201,
    idempotent: true,
    tags: ['messages'],
  },
  { method: 'GET', path: '/api/topics/{topicId}/messages', op: listMessages, tags: ['messages'] },
  {
    method: 'POST',
    path: '/api/dm-rooms/{dmRoomId}/messages',
    op: sendMessage,
    status: 201,
    idempotent: true,
    tags: ['messages'],
  },
  { method: 'GET', path: '/api/dm-rooms/{dmRoomId}/messages', op: listMessages, tags: ['messages'] },
];
