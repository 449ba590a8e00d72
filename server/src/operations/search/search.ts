import { z } from 'zod';
import { LIMITS } from '../../domain/limits.js';
import { isAppError } from '../../domain/errors.js';
import type { ChannelRow, TaskRow } from '../../storage/schema.js';
import { SearchBudget, type MessageCandidate, type MessageQuery } from '../../storage/stores/search.js';
import type { UserWithDepartment } from '../../storage/stores/users.js';
import { fold, words } from '../../storage/stores/search-text.js';
import { actorRef, type Actor } from '../context.js';
import { defineOperation } from '../operation.js';
import { limit } from '../schemas.js';
import {
  ChannelView,
  channelView,
  MessageView,
  messageView,
  TaskView,
  taskView,
  UserView,
  userView,
} from '../views.js';
import { outsideGrant } from '../access.js';
import { reachableChannels, reachableTopics } from '../containers/list-containers.js';
import type { OpContext } from '../context.js';
import { dayAfter, parseQuery, type ParsedQuery } from './query.js';
import { scoreRows, snippet, type Field } from './rank.js';

export const SEARCH_TYPES = ['messages', 'users', 'tasks', 'channels', 'all'] as const;
export const SEARCH_SORTS = ['relevance', 'newest'] as const;

/** Shown in the OpenAPI document and the MCP tool's input schema; docs/SEARCH.md has the details. */
const SYNTAX =
  'Words (all must match, any order, case and accents ignored; the last word also matches as a prefix), ' +
  '"quoted phrases", word* for a prefix, and filters: in:#channel or in:<container id>, from:@name or ' +
  'from:<user or bot id>, before:YYYY-MM-DD, after:YYYY-MM-DD, has:file';

export const SearchInput = z.strictObject({
  query: z
    .string({ message: 'must be a string' })
    .trim()
    .min(1, 'must not be empty')
    .max(200, 'must be at most 200 characters')
    .describe(SYNTAX),
  type: z
    .enum(SEARCH_TYPES)
    .default('all')
    .describe('Which category to search: messages, users, tasks, channels, or all'),
  limit: limit(LIMITS.search.default, LIMITS.search.max).describe(
    `Maximum results per category (default ${LIMITS.search.default}, at most ${LIMITS.search.max})`,
  ),
  sort: z
    .enum(SEARCH_SORTS)
    .default('relevance')
    .describe('relevance (default; newer first among equals) or newest (newest first)'),
});

export const SearchMessageView = MessageView.extend({
  snippet: z
    .string()
    .describe('Up to ~200 characters around the match, HTML-escaped, matched words in <mark>…</mark>'),
});
export type SearchMessageView = z.infer<typeof SearchMessageView>;

export const SearchResultView = z.object({
  query: z.string(),
  messages: z.array(SearchMessageView).optional(),
  users: z.array(UserView).optional(),
  tasks: z.array(TaskView).optional(),
  channels: z.array(ChannelView).optional(),
});
export type SearchResultView = z.infer<typeof SearchResultView>;

/**
 * How many of the newest matches are ranked: ten times the limit, at least 100 and at most 200. The
 * index finds them newest first and stops there, so a common word costs this many rows, not every
 * message that has it; the best of them by relevance are returned. Below this many matches, every
 * match is ranked. (The cost of a search of a frequent word is about proportional to it: 100 rather than
 * 200 for the default limit of 10 halved the CPU time of the ranking and, on PostgreSQL, of the rows
 * read in index order.)
 */
const candidatesFor = (limit: number) => Math.min(200, Math.max(100, 10 * limit));
const SMALL_CANDIDATES = 100;

type Reach = MessageQuery['reach'];
type Sort = (typeof SEARCH_SORTS)[number];

/**
 * Searches what the caller can reach, in its own organization only: messages of its channels, topics
 * and DM rooms (never deleted ones); users of its organization; tasks of its topics; channels it can
 * see. No scope needed. Costs 5 of the caller's rate-limit tokens (it reads far more than a write).
 */
export const search = defineOperation({
  name: 'search',
  summary:
    'Full-text search over messages, users, tasks and channels you can reach: words, "phrases", prefixes, filters in:/from:/before:/after:/has:file; ranked by relevance or newest',
  input: SearchInput,
  output: SearchResultView,
  actors: ['user', 'bot'],
  scope: 'any',
  rateCost: 5,
  async run(ctx, input) {
    const q = parseQuery(input.query);
    const stores = ctx.services.storage.stores;
    const { actor } = ctx;
    const want = (t: (typeof SEARCH_TYPES)[number]) => input.type === 'all' || input.type === t;
    const out: SearchResultView = { query: input.query };
    const needMessages = want('messages');
    const [allChannels, allTopics, allDms] = await Promise.all([
      needMessages || want('channels') || q.in.length ? reachableChannels(stores, actor) : [],
      needMessages || want('tasks') ? reachableTopics(stores, actor) : [],
      needMessages ? stores.containers.listDmRooms(actor.orgId, actorRef(actor)) : [],
    ]);
    // A key's containers grant (access.ts): only the containers it names are searched.
    const granted = actor.kind === 'bot' && actor.grants?.containers;
    const channels = granted ? allChannels.filter((c) => !outsideGrant(actor, c.id)) : allChannels;
    const topics = granted ? allTopics.filter((t) => !outsideGrant(actor, t.id, t.project_id)) : allTopics;
    const dms = granted ? allDms.filter((d) => !outsideGrant(actor, d.id)) : allDms;
    const reach = narrow(
      {
        channelIds: channels.map((c) => c.id),
        topicIds: topics.map((t) => t.id),
        dmRoomIds: dms.map((d) => d.id),
      },
      q,
      channels,
    );
    // The categories are read at once (each read on a reader of its own when one is free), all within
    // one time budget.
    const { search: index } = ctx.services.storage;
    const budget = new SearchBudget(ctx.services.config.search.timeoutMs, ctx.services.clock);
    const [messages, users, tasks] = await Promise.all([
      needMessages ? searchMessages(ctx, q, reach, input, budget) : undefined,
      want('users') && q.clauses.length ? index.users(actor.orgId, q.clauses, SMALL_CANDIDATES, budget) : [],
      want('tasks') ? index.tasks(reach.topicIds, q.clauses, SMALL_CANDIDATES, budget) : [],
    ]).catch((err: unknown) => {
      if (isAppError(err) && err.code === 'search_timeout') ctx.services.metrics.searchTimedOut();
      throw err;
    });
    if (messages) out.messages = messages;
    if (want('users')) out.users = best(users, USER_FIELDS, q, input, (u) => u.created_at).map(userView);
    if (want('tasks')) out.tasks = best(tasks, TASK_FIELDS, q, input, (t) => t.updated_at).map(taskView);
    if (want('channels')) {
      // The channels the caller can see are already in hand (at most 1,000): matched here, no index needed.
      out.channels = best(
        q.clauses.length ? channels : [],
        CHANNEL_FIELDS,
        q,
        input,
        (c) => c.created_at,
      ).map(channelView);
    }
    return out;
  },
});

const USER_FIELDS: Field<UserWithDepartment>[] = [
  { text: (u) => u.display_name, weight: 2 },
  { text: (u) => u.email, weight: 1 },
];
const TASK_FIELDS: Field<TaskRow>[] = [
  { text: (t) => t.title, weight: 2 },
  { text: (t) => t.description, weight: 1 },
];
const CHANNEL_FIELDS: Field<ChannelRow>[] = [
  { text: (c) => c.name, weight: 2 },
  { text: (c) => c.description, weight: 1 },
];
const MESSAGE_FIELDS: Field<MessageCandidate>[] = [{ text: (m) => m.content, weight: 1 }];

/** `in:` narrows what is searched to the named containers the caller reaches (others: nothing). */
function narrow(reach: Reach, q: ParsedQuery, channels: ChannelRow[]): Reach {
  if (q.in.length === 0) return reach;
  const out: Reach = { channelIds: [], topicIds: [], dmRoomIds: [] };
  for (const target of q.in) {
    if (target.startsWith('#')) {
      const name = target.slice(1).toLowerCase();
      for (const c of channels) if (c.name.toLowerCase() === name) out.channelIds.push(c.id);
    } else if (reach.channelIds.includes(target)) out.channelIds.push(target);
    else if (reach.topicIds.includes(target)) out.topicIds.push(target);
    else if (reach.dmRoomIds.includes(target)) out.dmRoomIds.push(target);
  }
  return out;
}

async function searchMessages(
  ctx: OpContext,
  q: ParsedQuery,
  reach: Reach,
  { sort, limit }: { sort: Sort; limit: number },
  budget: SearchBudget,
): Promise<z.infer<typeof SearchMessageView>[]> {
  const { actor } = ctx;
  const senders = await resolveSenders(ctx, actor, q.from, budget);
  if (senders && senders.length === 0) return []; // from: someone who does not exist
  const { search } = ctx.services.storage;
  const candidates = await search.messages(
    {
      orgId: actor.orgId,
      reach,
      clauses: q.clauses,
      senders,
      before: q.before,
      after: q.after && dayAfter(q.after),
      hasFile: q.hasFile,
      candidates: candidatesFor(limit),
    },
    budget,
  );
  const top = best(candidates, MESSAGE_FIELDS, q, { sort, limit }, (m) => m.created_at);
  // The full rows of the best only, unless they came along (PostgreSQL); one deleted meanwhile is left out.
  const missing = top.filter((c) => !c.row).map((c) => c.id);
  const rows = new Map((await search.messageRows(missing)).map((m) => [m.id, m]));
  return top.flatMap((c) => {
    const m = c.row ?? rows.get(c.id);
    return m ? [{ ...messageView(m), snippet: snippet(m.content, q.clauses) }] : [];
  });
}

/**
 * Who `from:` means: an id (of a user or a bot), or `@` and a user's display name or e-mail or a
 * bot's name (case and accents ignored). Users are looked up through the search index by the words
 * of the name, then compared whole.
 */
async function resolveSenders(ctx: OpContext, actor: Actor, from: string[], budget: SearchBudget) {
  if (from.length === 0) return undefined;
  const out: { type: 'user' | 'bot'; id: string }[] = [];
  for (const f of from) {
    if (!f.startsWith('@')) {
      out.push({ type: 'user', id: f }, { type: 'bot', id: f });
      continue;
    }
    const name = fold(f.slice(1));
    const ws = words(name);
    if (ws.length === 0) continue;
    const [users, bots] = await Promise.all([
      ctx.services.storage.search.users(
        actor.orgId,
        [{ words: ws, prefix: false }],
        SMALL_CANDIDATES,
        budget,
      ),
      ctx.services.storage.stores.bots.listVisible(actor.orgId),
    ]);
    for (const u of users)
      if (fold(u.display_name) === name || u.email.toLowerCase() === name)
        out.push({ type: 'user', id: u.id });
    for (const b of bots) if (fold(b.name) === name) out.push({ type: 'bot', id: b.id });
  }
  return out;
}

/**
 * The rows that really match, best first: by score (sort=relevance) with the newer first among
 * equals, or newest first (sort=newest); then cut to the limit. Ties end on the id, so the order is
 * the same on every database.
 */
function best<T extends { id: string }>(
  rows: readonly T[],
  fields: Field<T>[],
  q: ParsedQuery,
  opts: { sort: Sort; limit: number },
  time: (row: T) => string,
): T[] {
  const scored = scoreRows(rows, fields, q.clauses);
  const newer = (a: T, b: T) => (time(a) === time(b) ? (a.id < b.id ? 1 : -1) : time(a) < time(b) ? 1 : -1);
  scored.sort((a, b) =>
    opts.sort === 'relevance' && a.score !== b.score ? b.score - a.score : newer(a.row, b.row),
  );
  return scored.slice(0, opts.limit).map((s) => s.row);
}
