import { z } from 'zod';
import type { ChannelRow, ProjectRow, TopicRow } from '../../storage/schema.js';
import type { Stores } from '../../storage/stores/index.js';
import { actorRef, type Actor } from '../context.js';
import { isOrgAdmin, loadProject, outsideGrant } from '../access.js';
import { defineOperation } from '../operation.js';
import { uuid } from '../schemas.js';
import { ChannelView, channelView, ProjectView, projectView, TopicView, topicView } from '../views.js';

/**
 * What an actor reaches, in its own organization: bots the channels and projects (with their topics)
 * they were added to; users the public channels and those they belong to, and the projects they belong
 * to (org admins: every project). The same rules as access.ts, as lists.
 */
export async function reachableChannels(
  stores: Stores,
  actor: Actor,
  query?: string,
  limit?: number,
  joined = false,
): Promise<ChannelRow[]> {
  return stores.containers.listChannels(actor.orgId, actorRef(actor), {
    onlyMemberOf: actor.kind === 'bot' || joined,
    ...(query !== undefined && { query }),
    ...(limit !== undefined && { limit }),
  });
}

export async function reachableProjects(stores: Stores, actor: Actor): Promise<ProjectRow[]> {
  return stores.containers.listProjects(actor.orgId, actorRef(actor), {
    all: isOrgAdmin(actor, actor.orgId),
  });
}

export async function reachableTopics(
  stores: Stores,
  actor: Actor,
  opts: { query?: string; limit?: number } = {},
): Promise<TopicRow[]> {
  const projects = await reachableProjects(stores, actor);
  return stores.containers.listTopics(
    projects.map((p) => p.id),
    opts,
  );
}

export const CONTAINER_TYPES = ['channels', 'projects', 'topics', 'all'] as const;

export const ListContainersInput = z.strictObject({
  type: z
    .enum(CONTAINER_TYPES)
    .default('all')
    .describe('What to list: channels, projects, topics, or all of them'),
  project_id: uuid('project').optional().describe('Only the topics of this project'),
  joined: z
    .enum(['true', 'false'])
    .optional()
    .describe('true: only the channels you are a member of (not every public one)'),
});

export const ContainersView = z.object({
  channels: z.array(ChannelView).optional(),
  projects: z.array(ProjectView).optional(),
  topics: z.array(TopicView).optional(),
});
export type ContainersView = z.infer<typeof ContainersView>;

export const listContainers = defineOperation({
  name: 'containers.list',
  summary:
    'Channels, projects and topics you can reach (bots: those they were added to); project_id narrows topics to one project',
  input: ListContainersInput,
  output: ContainersView,
  actors: ['user', 'bot'],
  scope: 'channels:read',
  async run(ctx, input) {
    const stores = ctx.services.storage.stores;
    const { actor } = ctx;
    const want = (t: (typeof CONTAINER_TYPES)[number]) => input.type === 'all' || input.type === t;
    const out: ContainersView = {};
    if (want('channels'))
      out.channels = (await reachableChannels(stores, actor, undefined, undefined, input.joined === 'true'))
        .filter((c) => !outsideGrant(actor, c.id))
        .map(channelView);
    let projects: ProjectRow[] | undefined;
    if (want('projects') || (want('topics') && !input.project_id))
      projects = await reachableProjects(stores, actor);
    // A key's containers grant (access.ts): only what it names, a topic also through its project.
    if (want('projects')) out.projects = projects!.filter((p) => !outsideGrant(actor, p.id)).map(projectView);
    if (want('topics')) {
      const ids = input.project_id
        ? [(await loadProject(stores, actor, input.project_id)).id]
        : projects!.map((p) => p.id);
      out.topics = (await stores.containers.listTopics(ids))
        .filter((t) => !outsideGrant(actor, t.id, t.project_id))
        .map(topicView);
    }
    return out;
  },
});
