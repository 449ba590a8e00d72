import { z } from 'zod';
import { AppError, notFound } from '../../domain/errors.js';
import { actorRef } from '../context.js';
import { inOrg, isOrgAdmin, loadChannel, loadProject, loadTopic } from '../access.js';
import { defineOperation } from '../operation.js';
import { limit, lookupQuery, uuid } from '../schemas.js';
import { listOf } from '../views.js';

/**
 * Hashtags: `#…` links to channels, projects, tasks and tags. Search (`GET /api/hashtags/search?q=`)
 * returns only what the caller can see; preview cards (`GET /api/hashtags/preview/{type}/{id}`)
 * answer 404 for anything it cannot see, exactly as for what does not exist.
 */

export const HashtagItem = z.object({
  type: z.enum(['channel', 'task', 'project', 'tag']),
  id: z.string(),
  name: z.string(),
  hashtag: z.string().describe('Text to insert, e.g. #general'),
  is_private: z.boolean().optional(),
  status: z.string().optional(),
  topic_id: z.string().optional(),
  project_id: z.string().optional(),
});
type HashtagItem = z.infer<typeof HashtagItem>;

export const searchHashtags = defineOperation({
  name: 'hashtags.search',
  summary: 'Hashtag suggestions: channels, projects, tasks and tags you can see whose name contains q',
  input: z.strictObject({
    q: lookupQuery,
    limit: limit(10, 50).describe('Per type'),
  }),
  output: listOf(HashtagItem),
  actors: ['user', 'bot'],
  scope: 'channels:read',
  async run(ctx, input) {
    const stores = ctx.services.storage.stores;
    const { actor } = ctx;
    const q = input.q.trim().replace(/^#/, '');
    const orgId = actor.orgId;
    const viewer = actorRef(actor);
    const admin = isOrgAdmin(actor, orgId);
    const [channels, projects, tags] = await Promise.all([
      stores.containers.listChannels(orgId, viewer, {
        onlyMemberOf: actor.kind === 'bot',
        ...(q && { query: q }),
        limit: input.limit,
      }),
      stores.containers.listProjects(orgId, viewer, {
        all: admin,
        ...(q && { query: q }),
        limit: input.limit,
      }),
      stores.directory.searchTags(orgId, q, input.limit),
    ]);
    // Tasks live in topics of the projects the caller can reach.
    const reachable = await stores.containers.listProjects(orgId, viewer, { all: admin, limit: 1000 });
    const topics = await stores.containers.listTopics(reachable.map((p) => p.id));
    const tasks = await stores.directory.searchTasks(
      topics.map((t) => t.id),
      q,
      input.limit,
    );
    const items: HashtagItem[] = [
      ...channels.map((c) => ({
        type: 'channel' as const,
        id: c.id,
        name: c.name,
        hashtag: `#${c.name}`,
        is_private: c.is_private === 1,
      })),
      ...projects.map((p) => ({ type: 'project' as const, id: p.id, name: p.name, hashtag: `#${p.name}` })),
      ...tasks.map((t) => ({
        type: 'task' as const,
        id: t.id,
        name: t.title,
        hashtag: `#${t.title}`,
        status: t.status,
        topic_id: t.topic_id,
        project_id: t.project_id,
      })),
      ...tags.map((t) => ({ type: 'tag' as const, id: t.id, name: t.name, hashtag: `#${t.name}` })),
    ];
    return { items };
  },
});

export const PreviewCard = z.object({
  type: z.enum(['channel', 'task', 'project']),
  id: z.string(),
  title: z.string(),
  description: z.string(),
  url: z.string().describe('API path of the target'),
  details: z.record(z.string(), z.unknown()),
});

export const hashtagPreview = defineOperation({
  name: 'hashtags.preview',
  summary: 'Preview card of a channel, task or project you can see',
  input: z.strictObject({
    type: z.enum(['channel', 'task', 'project'], { message: 'must be channel, task or project' }),
    id: uuid('target'),
  }),
  output: PreviewCard,
  actors: ['user', 'bot'],
  scope: 'channels:read',
  async run(ctx, input) {
    const stores = ctx.services.storage.stores;
    const { actor } = ctx;
    switch (input.type) {
      case 'channel': {
        const c = await loadChannel(stores, actor, input.id, 'read');
        const counts = await stores.directory.channelCounts(c);
        return {
          type: 'channel' as const,
          id: c.id,
          title: `#${c.name}`,
          description: c.description,
          url: `/api/channels/${c.id}`,
          details: { name: c.name, is_private: c.is_private === 1, ...counts, created_at: c.created_at },
        };
      }
      case 'project': {
        const p = await loadProject(stores, actor, input.id);
        const counts = await stores.directory.projectCounts(p);
        return {
          type: 'project' as const,
          id: p.id,
          title: p.name,
          description: p.description,
          url: `/api/projects/${p.id}`,
          details: { name: p.name, ...counts, created_at: p.created_at },
        };
      }
      case 'task': {
        const t = await stores.directory.getTaskWithPlace(input.id);
        if (!t || !inOrg(actor, t.org_id)) throw notFound('Task');
        try {
          await loadTopic(stores, actor, t.topic_id);
        } catch (e) {
          if (e instanceof AppError && e.code === 'not_found') throw notFound('Task');
          throw e;
        }
        const assignee = t.assignee_id ? await stores.users.get(t.assignee_id) : undefined;
        return {
          type: 'task' as const,
          id: t.id,
          title: t.title,
          description: t.description.slice(0, 500),
          url: `/api/tasks/${t.id}`,
          details: {
            status: t.status,
            priority: t.priority,
            due_date: t.due_date,
            assignee_id: t.assignee_id,
            assignee_name: assignee?.display_name ?? null,
            topic_id: t.topic_id,
            topic_name: t.topic_name,
            project_id: t.project_id,
            project_name: t.project_name,
            updated_at: t.updated_at,
          },
        };
      }
    }
  },
});
