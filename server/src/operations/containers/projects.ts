import { z } from 'zod';
import { AppError } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import { actorRef } from '../context.js';
import { isOrgAdmin, loadProject } from '../access.js';
import { defineOperation } from '../operation.js';
import { description, name, uuid } from '../schemas.js';
import { listOf, ProjectView, projectView, TopicView, topicView } from '../views.js';
import { emitResourcesChanged, write } from '../write.js';
import {
  isBuiltinBot,
  memberInput,
  MembershipResult,
  ONE_MEMBER,
  oneMember,
  resolveMember,
} from './channels.js';

export const createProject = defineOperation({
  name: 'projects.create',
  summary: 'Create a project in your organization; you become its first member',
  input: z.strictObject({ name, description: description.optional() }),
  output: ProjectView,
  actors: ['user'],
  async run(ctx, input) {
    const { actor } = ctx;
    if (actor.kind !== 'user') throw new AppError('forbidden', 'Only users create projects');
    return write(ctx.services, async ({ stores, now }) => {
      const row = {
        id: newId(),
        org_id: actor.orgId,
        name: input.name,
        description: input.description ?? '',
        created_by: actor.userId,
        created_at: now,
        updated_at: now,
      };
      await stores.containers.createProject(row);
      await stores.containers.addMember('project', row.id, { type: 'user', id: actor.userId }, now);
      return projectView(row);
    });
  },
});

export const listProjects = defineOperation({
  name: 'projects.list',
  summary: 'Projects you are a member of (all of the organization for org admins)',
  input: z.strictObject({}),
  output: listOf(ProjectView),
  actors: ['user', 'bot'],
  scope: 'channels:read',
  async run(ctx) {
    const rows = await ctx.services.storage.stores.containers.listProjects(
      ctx.actor.orgId,
      actorRef(ctx.actor),
      {
        all: isOrgAdmin(ctx.actor, ctx.actor.orgId),
      },
    );
    return { items: rows.map(projectView) };
  },
});

export const getProject = defineOperation({
  name: 'projects.get',
  summary: 'A project you are a member of',
  input: z.strictObject({ project_id: uuid('project') }),
  output: ProjectView,
  actors: ['user', 'bot'],
  scope: 'channels:read',
  async run(ctx, input) {
    return projectView(await loadProject(ctx.services.storage.stores, ctx.actor, input.project_id));
  },
});

export const addProjectMember = defineOperation({
  name: 'projects.members.add',
  summary: 'Add a user or a bot to a project (project members and org admins)',
  input: z.strictObject({ project_id: uuid('project'), ...memberInput }).refine(oneMember, ONE_MEMBER),
  output: MembershipResult,
  actors: ['user'],
  async run(ctx, input) {
    return write(ctx.services, async (tx) => {
      const { stores, now } = tx;
      const p = await loadProject(stores, ctx.actor, input.project_id);
      const member = await resolveMember(stores, p.org_id, input);
      const added = await stores.containers.addMember('project', p.id, member, now);
      if (added) {
        // A bot's MCP sessions hear of it through member.joined (its resources now include the topics).
        tx.emit('member.joined', p.org_id, {
          project_id: p.id,
          member_type: member.type,
          member_id: member.id,
          added_by: actorRef(ctx.actor).id,
        });
      }
      return { member_type: member.type, member_id: member.id, added };
    });
  },
});

export const removeProjectMember = defineOperation({
  name: 'projects.members.remove',
  summary: 'Remove a user or a bot from a project (yourself, or anyone as its creator or an org admin)',
  input: z.strictObject({ project_id: uuid('project'), ...memberInput }).refine(oneMember, ONE_MEMBER),
  output: z.object({ member_type: z.enum(['user', 'bot']), member_id: z.string(), removed: z.boolean() }),
  actors: ['user'],
  async run(ctx, input) {
    return write(ctx.services, async ({ stores, emit }) => {
      const p = await loadProject(stores, ctx.actor, input.project_id);
      const member = await resolveMember(stores, p.org_id, input);
      const by = actorRef(ctx.actor).id;
      const self = member.type === 'user' && member.id === by;
      // A built-in platform bot joined where its command was used: any member may send it away.
      const builtinBot =
        (await isBuiltinBot(stores, member)) &&
        (await stores.containers.isMember('project', p.id, actorRef(ctx.actor)));
      if (!self && p.created_by !== by && !builtinBot && !isOrgAdmin(ctx.actor, p.org_id)) {
        throw new AppError('forbidden', 'Only the project creator or an org admin removes other members');
      }
      const removed = await stores.containers.removeMember('project', p.id, member);
      if (removed)
        emit('member.left', p.org_id, {
          project_id: p.id,
          member_type: member.type,
          member_id: member.id,
          removed_by: by,
        });
      return { member_type: member.type, member_id: member.id, removed };
    });
  },
});

export const createTopic = defineOperation({
  name: 'topics.create',
  summary: 'Create a topic in a project you are a member of',
  input: z.strictObject({ project_id: uuid('project'), name }),
  output: TopicView,
  actors: ['user'],
  async run(ctx, input) {
    return write(ctx.services, async (tx) => {
      const { stores, now } = tx;
      const p = await loadProject(stores, ctx.actor, input.project_id);
      const row = {
        id: newId(),
        org_id: p.org_id,
        project_id: p.id,
        name: input.name,
        created_by: actorRef(ctx.actor).id,
        created_at: now,
        updated_at: now,
      };
      await stores.containers.createTopic(row);
      const members = await stores.containers.listMembers('project', p.id);
      emitResourcesChanged(
        tx,
        p.org_id,
        members.map((m) => ({ type: m.member_type, id: m.member_id })),
      );
      return topicView(row);
    });
  },
});

export const listTopics = defineOperation({
  name: 'topics.list',
  summary: 'Topics of a project',
  input: z.strictObject({ project_id: uuid('project') }),
  output: listOf(TopicView),
  actors: ['user', 'bot'],
  scope: 'channels:read',
  async run(ctx, input) {
    const stores = ctx.services.storage.stores;
    const p = await loadProject(stores, ctx.actor, input.project_id);
    return { items: (await stores.containers.listTopics([p.id])).map(topicView) };
  },
});
