import { z } from 'zod';
import { AppError, conflict } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import { actorRef } from '../context.js';
import { isOrgAdmin, loadProject, loadTopic } from '../access.js';
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
    return write(ctx, async ({ stores, now, emit }) => {
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
      const view = projectView(row);
      emit('project.created', row.org_id, { project_id: row.id, project: view, actor_id: actor.userId });
      return view;
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
    return write(ctx, async (tx) => {
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

export const listProjectMembers = defineOperation({
  name: 'projects.members.list',
  summary: 'Members of a project (its members and org admins)',
  input: z.strictObject({ project_id: uuid('project') }),
  output: listOf(
    z.object({ member_type: z.enum(['user', 'bot']), member_id: z.string(), joined_at: z.string() }),
  ),
  actors: ['user', 'bot'],
  scope: 'channels:read',
  async run(ctx, input) {
    const stores = ctx.services.storage.stores;
    const p = await loadProject(stores, ctx.actor, input.project_id);
    return { items: await stores.containers.listMembers('project', p.id) };
  },
});

export const removeProjectMember = defineOperation({
  name: 'projects.members.remove',
  summary: 'Remove a user or a bot from a project (yourself, or anyone as its creator or an org admin)',
  input: z.strictObject({ project_id: uuid('project'), ...memberInput }).refine(oneMember, ONE_MEMBER),
  output: z.object({ member_type: z.enum(['user', 'bot']), member_id: z.string(), removed: z.boolean() }),
  actors: ['user'],
  async run(ctx, input) {
    return write(ctx, async ({ stores, emit }) => {
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
    return write(ctx, async (tx) => {
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
      tx.emit('topic.created', p.org_id, {
        topic_id: row.id,
        project_id: p.id,
        topic: topicView(row),
        actor_id: row.created_by,
      });
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

export const updateProject = defineOperation({
  name: 'projects.update',
  summary: 'Rename or describe a project (its members or an org admin)',
  input: z.strictObject({
    project_id: uuid('project'),
    name: name.optional(),
    description: description.optional(),
  }),
  output: ProjectView,
  actors: ['user'],
  async run(ctx, input) {
    return write(ctx, async ({ stores, now, emit }) => {
      const p = await loadProject(stores, ctx.actor, input.project_id);
      const patch = {
        ...(input.name !== undefined && { name: input.name }),
        ...(input.description !== undefined && { description: input.description }),
      };
      await stores.containers.updateProject(p.id, patch, now);
      const view = projectView((await stores.containers.getProject(p.id))!);
      emit('project.updated', p.org_id, {
        project_id: p.id,
        project: view,
        actor_id: actorRef(ctx.actor).id,
        changes: Object.keys(patch),
      });
      return view;
    });
  },
});

export const archiveProject = defineOperation({
  name: 'projects.archive',
  summary:
    'Archive a project (its creator or an org admin): it and its topics leave the listings; their history stays readable',
  input: z.strictObject({ project_id: uuid('project') }),
  output: ProjectView,
  actors: ['user'],
  async run(ctx, input) {
    return write(ctx, async ({ stores, now, emit }) => {
      const p = await loadProject(stores, ctx.actor, input.project_id);
      const by = actorRef(ctx.actor).id;
      if (p.created_by !== by && !isOrgAdmin(ctx.actor, p.org_id))
        throw new AppError('forbidden', 'Only the project creator or an org admin archives a project');
      if (!(await stores.containers.setArchived('projects', p.id, now, now)))
        throw conflict('The project is archived already');
      const view = projectView((await stores.containers.getProject(p.id))!);
      emit('project.archived', p.org_id, { project_id: p.id, project: view, actor_id: by });
      return view;
    });
  },
});

export const updateTopic = defineOperation({
  name: 'topics.update',
  summary: "Rename a topic (its project's members or an org admin)",
  input: z.strictObject({ topic_id: uuid('topic'), name }),
  output: TopicView,
  actors: ['user'],
  async run(ctx, input) {
    return write(ctx, async ({ stores, now, emit }) => {
      const t = await loadTopic(stores, ctx.actor, input.topic_id);
      await stores.containers.updateTopic(t.id, { name: input.name }, now);
      const view = topicView((await stores.containers.getTopic(t.id))!);
      emit('topic.updated', t.org_id, {
        topic_id: t.id,
        project_id: t.project_id,
        topic: view,
        actor_id: actorRef(ctx.actor).id,
        changes: ['name'],
      });
      return view;
    });
  },
});

export const archiveTopic = defineOperation({
  name: 'topics.archive',
  summary:
    "Archive a topic (its creator, the project's creator or an org admin): it leaves the listings and takes no new messages",
  input: z.strictObject({ topic_id: uuid('topic') }),
  output: TopicView,
  actors: ['user'],
  async run(ctx, input) {
    return write(ctx, async ({ stores, now, emit }) => {
      const t = await loadTopic(stores, ctx.actor, input.topic_id);
      const by = actorRef(ctx.actor).id;
      const p = await stores.containers.getProject(t.project_id);
      if (t.created_by !== by && p?.created_by !== by && !isOrgAdmin(ctx.actor, t.org_id))
        throw new AppError(
          'forbidden',
          "Only the topic's creator, the project's creator or an org admin archives a topic",
        );
      if (!(await stores.containers.setArchived('topics', t.id, now, now)))
        throw conflict('The topic is archived already');
      const view = topicView((await stores.containers.getTopic(t.id))!);
      emit('topic.archived', t.org_id, {
        topic_id: t.id,
        project_id: t.project_id,
        topic: view,
        actor_id: by,
      });
      return view;
    });
  },
});
