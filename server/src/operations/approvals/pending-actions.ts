import { z } from 'zod';
import type { MessageAction } from '../../domain/actions.js';
import { AppError, isAppError, notFound } from '../../domain/errors.js';
import { activeGrants, toolOf } from '../../domain/grants.js';
import { newId } from '../../domain/ids.js';
import type { BotType } from '../../domain/roles.js';
import type { PendingActionRow } from '../../storage/schema.js';
import type { Stores } from '../../storage/stores/index.js';
import { isOrgAdmin } from '../access.js';
import { listContainers } from '../containers/list-containers.js';
import { findOrCreateDmRoom } from '../containers/dm-rooms.js';
import type { Actor, BotActor, OpContext, Services } from '../context.js';
import type { IdempotencyClaim } from '../idempotency.js';
import { insertMessage, listMessages, messageEventData, sendMessage } from '../messages/messages.js';
import {
  checkAccess,
  defineOperation,
  isWriting,
  parseInput,
  runChecked,
  type Operation,
} from '../operation.js';
import { limit, uuid } from '../schemas.js';
import { search } from '../search/search.js';
import { createTask, listTasks, updateTask } from '../tasks/tasks.js';
import { getUser, listUsers } from '../users/users.js';
import { listOf } from '../views.js';
import { outsideRequest, write, type WriteTx } from '../write.js';

/**
 * Human approval of an agent's writes (issue 21; docs/API.md "Approval"). A call of a bot key to a
 * tool its grants list under `approval` does not run: after a dry run (so that it is a call the key
 * could make: access, containers, grants, budget) it becomes a pending action, stored with the exact
 * operation, the parsed input, the key, the bot and the time, and the approvers get a card by DM from
 * the Approvals bot (bots/approvals.ts) with Approve and Reject.
 *
 * Exactly once: the decision is a compare-and-set pending → approved (two clicks, two instances: one
 * wins) that commits on its own; the execution then runs the operation as the bot with the stored
 * input, and its write marks the action executed in the same transaction (a compare-and-set
 * approved → executed through the write's idempotency claim: `completeInWrite`), so a second run —
 * the sweeper after a crash, another instance — rolls back. The sweeper (ApprovalSweeper) finishes
 * approved actions a crash left unexecuted, expires the stale ones and tells the outcome once.
 */

/** How long an approver has to decide (docs/API.md "Approval"). */
export const APPROVAL_TTL_MS = 24 * 3_600_000;
/** The built-in bot whose DMs carry the cards (bots/approvals.ts). */
export const APPROVALS_BOT = 'approvals';
const PREVIEW_CHARS = 1500;

/** The operations behind the tools a grant may put under approval. */
const OPERATIONS: ReadonlyMap<string, Operation> = new Map(
  (
    [
      sendMessage,
      listMessages,
      listContainers,
      createTask,
      updateTask,
      listTasks,
      search,
      getUser,
      listUsers,
    ] as Operation[]
  ).map((o) => [o.name, o]),
);

export const PendingActionStatus = z.enum([
  'pending',
  'approved',
  'rejected',
  'expired',
  'executed',
  'failed',
]);

export const PendingActionView = z.object({
  id: z.string(),
  status: PendingActionStatus.describe(
    'pending → approved | rejected | expired; approved → executed | failed (docs/API.md "Approval")',
  ),
  tool: z.string().describe('The MCP tool called (its REST twin runs the same operation)'),
  operation: z.string(),
  bot_id: z.string(),
  key_id: z.string(),
  input: z.record(z.string(), z.unknown()).describe('The input as parsed; approval runs exactly this'),
  summary: z.string().describe('What it will do, in words (as on the approvers’ card)'),
  target: z
    .object({ kind: z.string(), id: z.string(), name: z.string().nullable() })
    .nullable()
    .describe('Where it acts: the channel, topic, DM room or task'),
  requested_at: z.string(),
  expires_at: z.string(),
  decided_by: z.string().nullable(),
  decided_at: z.string().nullable(),
  executed_at: z.string().nullable(),
  result: z.unknown().nullable().describe('The operation’s result once executed (e.g. the message)'),
  error: z.string().nullable().describe('Why it failed (status failed)'),
});
export type PendingActionView = z.infer<typeof PendingActionView>;

/** REST's 202 answer to a call that now waits for approval. */
export const PendingApprovalAnswer = z.object({
  status: z.literal('pending_approval'),
  pending_action: PendingActionView,
});

interface Target {
  kind: string;
  id: string;
  name: string | null;
}

const json = (s: string | null): unknown => (s === null ? null : JSON.parse(s));

async function targetOf(stores: Stores, input: Record<string, unknown>): Promise<Target | null> {
  const s = (k: string) => (typeof input[k] === 'string' ? (input[k] as string) : undefined);
  const channel = s('channel_id');
  if (channel)
    return {
      kind: 'channel',
      id: channel,
      name: (await stores.containers.getChannel(channel))?.name ?? null,
    };
  const topic = s('topic_id');
  if (topic)
    return { kind: 'topic', id: topic, name: (await stores.containers.getTopic(topic))?.name ?? null };
  const dm = s('dm_room_id');
  if (dm) return { kind: 'dm_room', id: dm, name: null };
  const task = s('task_id');
  if (task) return { kind: 'task', id: task, name: (await stores.tasks.get(task))?.title ?? null };
  return null;
}

const targetText = (t: Target | null): string =>
  !t
    ? ''
    : t.kind === 'channel'
      ? ` in #${t.name ?? t.id}`
      : t.kind === 'topic'
        ? ` in the topic "${t.name ?? t.id}"`
        : t.kind === 'dm_room'
          ? ` in a DM room (${t.id})`
          : ` on the task "${t.name ?? t.id}"`;

function summaryOf(
  row: Pick<PendingActionRow, 'tool' | 'operation'>,
  input: Record<string, unknown>,
  t: Target | null,
) {
  switch (row.operation) {
    case 'messages.send':
      return `post a message${targetText(t)}`;
    case 'tasks.create':
      return `create the task "${String(input.title)}"${targetText(t)}`;
    case 'tasks.update': {
      const fields = Object.keys(input).filter((k) => k !== 'task_id');
      return `change ${fields.join(', ') || 'nothing'}${targetText(t)}`;
    }
    default:
      return `run ${row.tool}${targetText(t)}`;
  }
}

export async function viewOf(stores: Stores, row: PendingActionRow): Promise<PendingActionView> {
  const input = JSON.parse(row.input) as Record<string, unknown>;
  const target = await targetOf(stores, input);
  return {
    id: row.id,
    status: row.status,
    tool: row.tool,
    operation: row.operation,
    bot_id: row.bot_id,
    key_id: row.key_id,
    input,
    summary: summaryOf(row, input, target),
    target,
    requested_at: row.requested_at,
    expires_at: row.expires_at,
    decided_by: row.decided_by,
    decided_at: row.decided_at,
    executed_at: row.executed_at,
    result: json(row.result),
    error: row.error,
  };
}

// --- the card ----------------------------------------------------------------------------------

const quote = (s: string) =>
  (s.length > PREVIEW_CHARS ? `${s.slice(0, PREVIEW_CHARS)}…` : s)
    .split('\n')
    .map((l) => `> ${l}`)
    .join('\n');

function cardText(row: PendingActionRow, view: PendingActionView, botName: string, outcome?: string): string {
  const lines = [
    `**Approval ${outcome ? 'request' : 'needed'}**: the bot **${botName}** wants to ${view.summary}.`,
  ];
  const input = view.input;
  if (typeof input.content === 'string') lines.push('', quote(input.content));
  else if (row.operation === 'tasks.create' || row.operation === 'tasks.update') {
    const rest = Object.entries(input).filter(([k]) => k !== 'topic_id' && k !== 'task_id');
    if (rest.length > 0) lines.push('', quote(rest.map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join('\n')));
  }
  lines.push('');
  if (outcome) lines.push(`${outcome} · pending action \`${row.id}\``);
  else lines.push(`Tool \`${row.tool}\` · expires ${row.expires_at} · pending action \`${row.id}\``);
  return lines.join('\n');
}

const cardActions = (id: string): MessageAction[] => [
  { type: 'button', id: 'approve', label: 'Approve', value: `approve:${id}`, style: 'primary' },
  { type: 'button', id: 'reject', label: 'Reject', value: `reject:${id}`, style: 'danger' },
];

/** A click value of a card: `approve:<id>` or `reject:<id>`. */
export function parseCardValue(v: string): { decision: 'approve' | 'reject'; id: string } | null {
  const m = /^(approve|reject):([0-9a-f-]{36})$/.exec(v);
  return m ? { decision: m[1] as 'approve' | 'reject', id: m[2]! } : null;
}

/** Who gets the card: the bot's owner and the grant's approvers that are active users of the org, else its admins. */
async function cardRecipients(
  stores: Stores,
  orgId: string,
  approvers: readonly string[],
): Promise<string[]> {
  const out: string[] = [];
  for (const id of approvers) {
    const u = await stores.users.get(id);
    if (u && u.org_id === orgId && u.status === 'active') out.push(id);
  }
  if (out.length > 0) return out;
  const admins = await stores.users.list({ orgId, role: 'org_admin', limit: 20 });
  return admins.filter((u) => u.status === 'active').map((u) => u.id);
}

// --- the request -------------------------------------------------------------------------------

/** Whether this call must wait for approval (a bot key whose grants list the operation's tool). */
export const needsApproval = (op: Operation, actor: Actor): boolean =>
  actor.kind === 'bot' && actor.grants != null && actor.grants.approvalOperations.has(op.name);

/**
 * Turns a call that needs approval into a pending action: the call's checks (the operation's dry run:
 * access, containers, grants, budget, without writing), then the row and the approvers' cards in one
 * transaction. `input` is parsed; access is checked by the caller (`checkAccessForApproval`).
 */
export async function requestApproval(
  op: Operation,
  ctx: OpContext,
  input: unknown,
): Promise<PendingActionView> {
  const actor = ctx.actor;
  if (actor.kind !== 'bot') throw new AppError('internal', 'only bot keys ask for approval');
  const tool = toolOf(op.name) ?? op.name;
  let preview: unknown = null;
  if (op.dryRun)
    preview = await runChecked(op, { ...ctx, idempotency: undefined, dryRun: { events: [] } }, input);
  else if (isWriting(op)) throw new AppError('internal', `${op.name} has no dry run to check it with`);
  const stores = ctx.services.storage.stores;
  const bot = await stores.bots.get(actor.botId);
  const approvers = [
    ...new Set([...(bot?.created_by ? [bot.created_by] : []), ...(actor.grants?.raw.approvers ?? [])]),
  ];
  // Not the bot's write (a read-only key may ask for a read): the request's own, with its Idempotency-Key claim.
  return write({ services: ctx.services, idempotency: ctx.idempotency }, async (tx) => {
    const row: PendingActionRow = {
      id: newId(),
      org_id: actor.orgId,
      bot_id: actor.botId,
      key_id: actor.keyId,
      tool,
      operation: op.name,
      input: JSON.stringify(input),
      preview: preview === null ? null : JSON.stringify(preview),
      approvers: JSON.stringify(approvers),
      status: 'pending',
      requested_at: tx.now,
      expires_at: new Date(Date.parse(tx.now) + APPROVAL_TTL_MS).toISOString(),
      decided_by: null,
      decided_at: null,
      executed_at: null,
      result: null,
      error: null,
      cards: null,
      resolved_at: null,
    };
    await tx.stores.pendingActions.insert(row);
    const view = await viewOf(tx.stores, row);
    const cards = await sendCards(tx, row, view, bot?.name ?? 'bot', approvers);
    if (cards.length > 0) await tx.stores.pendingActions.setCards(row.id, JSON.stringify(cards));
    tx.emit('pending_action.created', actor.orgId, {
      pending_action_id: row.id,
      bot_id: row.bot_id,
      tool,
      approver_ids: cards.map((c) => c.user_id),
      expires_at: row.expires_at,
    });
    return view;
  });
}

async function sendCards(
  tx: WriteTx,
  row: PendingActionRow,
  view: PendingActionView,
  botName: string,
  approvers: readonly string[],
): Promise<{ user_id: string; message_id: string }[]> {
  const approvalsBot = await tx.stores.bots.getBuiltin(row.org_id, APPROVALS_BOT);
  if (!approvalsBot || approvalsBot.status !== 'active' || approvalsBot.deleted_at !== null) return [];
  const sender = { type: 'bot' as const, id: approvalsBot.id };
  const out: { user_id: string; message_id: string }[] = [];
  for (const userId of await cardRecipients(tx.stores, row.org_id, approvers)) {
    const room = await findOrCreateDmRoom(tx, row.org_id, [sender, { type: 'user', id: userId }]);
    const m = await insertMessage(tx, row.org_id, { kind: 'dm_room', id: room.id }, sender, {
      content: cardText(row, view, botName),
      actions: cardActions(row.id),
    });
    out.push({ user_id: userId, message_id: m.id });
  }
  return out;
}

/** Access for a call that will wait for approval: as for the call, except the approval grant itself. */
export function checkAccessForApproval(op: Operation, actor: Actor): void {
  // A dry run is let past the approval and confirm grants only; everything else is checked.
  checkAccess(op, actor, true);
}

/** REST: the whole path of a call that needs approval (access, input, then the request). */
export async function requestApprovalFor(
  op: Operation,
  ctx: OpContext,
  raw: unknown,
): Promise<PendingActionView> {
  checkAccessForApproval(op, ctx.actor);
  return requestApproval(op, ctx, parseInput(op.input, raw));
}

// --- the decision ------------------------------------------------------------------------------

/** Whether the user may decide: the bot's owner, an approver named on the grant, an admin of the org. */
function mayDecide(actor: Actor, row: PendingActionRow): boolean {
  if (actor.kind !== 'user') return false;
  if (isOrgAdmin(actor, row.org_id)) return true;
  return (JSON.parse(row.approvers) as string[]).includes(actor.userId);
}

/** The row a user may see: of their organization (system_admin: any), else not found. */
async function loadForUser(stores: Stores, actor: Actor, id: string): Promise<PendingActionRow> {
  const row = await stores.pendingActions.get(id);
  if (!row || actor.kind !== 'user' || (row.org_id !== actor.orgId && actor.role !== 'system_admin'))
    throw notFound('Pending action');
  if (!mayDecide(actor, row)) throw notFound('Pending action');
  return row;
}

const IdInput = z.strictObject({ id: uuid('pending action') });

async function decide(
  ctx: OpContext,
  id: string,
  decision: 'approve' | 'reject',
): Promise<PendingActionView> {
  const { actor, services } = ctx;
  const stores = services.storage.stores;
  const row = await stores.pendingActions.get(id);
  if (!row || actor.kind !== 'user' || (row.org_id !== actor.orgId && actor.role !== 'system_admin'))
    throw notFound('Pending action');
  if (!mayDecide(actor, row)) {
    throw new AppError(
      'forbidden',
      "Only the bot's owner, an approver named on the key's grants or an organization admin may decide",
    );
  }
  const to = decision === 'approve' ? 'approved' : 'rejected';
  const won = await write(ctx, async (tx) => {
    if (!(await tx.stores.pendingActions.decide(id, to, actor.userId, tx.now))) return false;
    // The cards say at once that it is decided (their buttons go): the outcome follows (resolve).
    if (to === 'approved') {
      const decided = (await tx.stores.pendingActions.get(id))!;
      const who = (await tx.stores.users.get(actor.userId))?.display_name ?? actor.userId;
      await editCards(tx, decided, `⏳ Approved by ${who} at ${tx.now}: running…`);
    }
    return true;
  });
  if (!won) {
    let now = await stores.pendingActions.get(id);
    if (now?.status === 'pending' && now.expires_at <= services.clock.nowIso()) {
      await expireAndResolve(services, now);
      now = await stores.pendingActions.get(id);
    }
    if (!now) throw notFound('Pending action');
    const same =
      decision === 'approve'
        ? ['approved', 'executed', 'failed'].includes(now.status)
        : now.status === 'rejected';
    if (same) return viewOf(stores, now); // a second click of the same button: the first one's outcome
    throw new AppError(
      'conflict',
      now.status === 'expired'
        ? `This pending action expired at ${now.expires_at}: it can no longer be ${to}`
        : `This pending action is already ${now.status}: it can no longer be ${to}`,
    );
  }
  if (decision === 'approve') await execute(services, id);
  await resolve(services, id);
  return viewOf(stores, (await stores.pendingActions.get(id))!);
}

export const approvePendingAction = defineOperation({
  name: 'pending_actions.approve',
  summary:
    "Approve a bot's pending action: it runs once, as the bot, with the stored input (the bot's owner, an approver named on the key's grants, or an org admin). A second approve answers the outcome; an expired or rejected one answers 409.",
  input: IdInput,
  output: PendingActionView,
  actors: ['user'],
  run: (ctx, input) => decide(ctx, input.id, 'approve'),
});

export const rejectPendingAction = defineOperation({
  name: 'pending_actions.reject',
  summary: "Reject a bot's pending action: nothing runs. An approved or expired one answers 409.",
  input: IdInput,
  output: PendingActionView,
  actors: ['user'],
  run: (ctx, input) => decide(ctx, input.id, 'reject'),
});

export const listPendingActions = defineOperation({
  name: 'pending_actions.list',
  summary:
    'Pending actions of your organization that you may decide (owner of the bot, approver on the grant, or org admin), newest first',
  input: z.strictObject({
    status: PendingActionStatus.optional(),
    limit: limit(50, 200),
    before: z.iso.datetime({ message: 'must be an ISO-8601 timestamp' }).optional(),
  }),
  output: listOf(PendingActionView),
  actors: ['user'],
  async run(ctx, input) {
    const { actor } = ctx;
    if (actor.kind !== 'user') throw new AppError('forbidden', 'Users only');
    const stores = ctx.services.storage.stores;
    const rows = await stores.pendingActions.listForOrg(actor.orgId, input);
    const now = ctx.services.clock.nowIso();
    const items: PendingActionView[] = [];
    for (const r of rows.filter((x) => mayDecide(actor, x))) {
      const v = await viewOf(stores, r);
      items.push(r.status === 'pending' && r.expires_at <= now ? { ...v, status: 'expired' } : v);
    }
    return { items };
  },
});

export const getPendingAction = defineOperation({
  name: 'pending_actions.get',
  summary: 'One pending action you may decide',
  input: IdInput,
  output: PendingActionView,
  actors: ['user'],
  async run(ctx, input) {
    const stores = ctx.services.storage.stores;
    return viewOf(stores, await loadForUser(stores, ctx.actor, input.id));
  },
});

/** The bot's own view: GET /api/bots/me/pending-actions/{id} and the MCP tool get_pending_action. */
export const getOwnPendingAction = defineOperation({
  name: 'pending_actions.get_own',
  summary:
    "One of this bot's pending actions (a call its key's grants sent for approval): its status and, once executed, the result",
  input: z.strictObject({ pending_action_id: uuid('pending action') }),
  output: PendingActionView,
  actors: ['bot'],
  scope: 'any',
  async run(ctx, input) {
    const { actor, services } = ctx;
    const stores = services.storage.stores;
    const row = await stores.pendingActions.get(input.pending_action_id);
    if (!row || actor.kind !== 'bot' || row.bot_id !== actor.botId) throw notFound('Pending action');
    const v = await viewOf(stores, row);
    return row.status === 'pending' && row.expires_at <= services.clock.nowIso()
      ? { ...v, status: 'expired' }
      : v;
  },
});

// --- the execution -----------------------------------------------------------------------------

/** Thrown in the execution's transaction when another run already executed the action (rolls it back). */
class AlreadyExecuted extends Error {}

/** The actor of the key that asked, as it is now (revoked, expired, disabled: a reason to fail). */
async function keyActor(services: Services, row: PendingActionRow): Promise<BotActor | string> {
  const stores = services.storage.stores;
  const key = await stores.bots.getKey(row.bot_id, row.key_id);
  const bot = await stores.bots.get(row.bot_id);
  if (!key || !bot || bot.deleted_at !== null) return 'the bot or its API key no longer exists';
  if (key.revoked_at !== null) return 'the API key was revoked';
  if (key.expires_at !== null && key.expires_at <= services.clock.nowIso()) return 'the API key expired';
  if (bot.status !== 'active') return 'the bot is disabled';
  return {
    kind: 'bot',
    botId: bot.id,
    orgId: bot.org_id,
    botType: bot.type as BotType,
    keyId: key.id,
    scopes: key.scopes === null ? null : (JSON.parse(key.scopes) as string[]),
    grants: activeGrants(key.grants ?? null),
    // A key paused by a guard rail since (operations/guardrails.ts) is refused like any call of it.
    paused:
      key.paused_at === null || key.paused_at === undefined
        ? null
        : { at: key.paused_at, reason: key.paused_reason ?? 'paused' },
  };
}

/**
 * Runs an approved action once (see the file's comment). Safe to call again, concurrently or after a
 * crash: only a run whose write marks the row executed commits.
 */
export async function execute(services: Services, id: string): Promise<void> {
  const stores = services.storage.stores;
  const row = await stores.pendingActions.get(id);
  if (!row || row.status !== 'approved') return;
  const fail = async (reason: string) => {
    await write(outsideRequest(services), (tx) =>
      tx.stores.pendingActions.finish(id, 'failed', { error: reason.slice(0, 1000) }, tx.now),
    );
  };
  const op = OPERATIONS.get(row.operation);
  if (!op) return fail(`the operation ${row.operation} is not one approval runs`);
  const actor = await keyActor(services, row);
  if (typeof actor === 'string') return fail(actor);
  const claim: IdempotencyClaim = {
    key: `pending-action:${id}`,
    statusOf: () => 200,
    inWrite: async (txStores, value) => {
      if (
        !(await txStores.pendingActions.finish(
          id,
          'executed',
          { result: JSON.stringify(value) },
          services.clock.nowIso(),
        ))
      )
        throw new AlreadyExecuted();
    },
  };
  try {
    // The grants as they are now (tools, read_only, containers, mentions, budget); the approval grant
    // itself is what the approver just answered.
    checkAccess(op, actor, true);
    const value = await runChecked(
      op,
      { actor, services, requestId: `approval:${id}`, idempotency: claim },
      json(row.input),
    );
    claim.ended = true;
    if (claim.stored === undefined) {
      // A read (no write to mark it in): recorded now; running it twice changed nothing.
      await write(outsideRequest(services), (tx) =>
        tx.stores.pendingActions.finish(id, 'executed', { result: JSON.stringify(value) }, tx.now),
      );
    }
  } catch (err) {
    claim.ended = true;
    if (err instanceof AlreadyExecuted) return;
    if (isAppError(err) && err.code !== 'internal' && err.code !== 'unavailable') {
      return fail(`${err.code}: ${err.message}`);
    }
    // The database or the process: left approved, the sweeper runs it again.
    services.log.warn({ err, pendingAction: id }, 'approved action not executed; will retry');
  }
}

async function expireAndResolve(services: Services, row: PendingActionRow): Promise<void> {
  await write(outsideRequest(services), (tx) => tx.stores.pendingActions.expire(row.id, tx.now));
  await resolve(services, row.id);
}

const OUTCOME: Record<string, string> = {
  rejected: '❌ Rejected',
  expired: '⌛ Expired',
  executed: '✅ Approved',
  failed: '⚠️ Approved, but it failed',
};

/** Edits the approvers' cards of a pending action to show `outcome` (their buttons removed). */
async function editCards(tx: WriteTx, row: PendingActionRow, outcome: string): Promise<void> {
  const cards = (json(row.cards) as { message_id: string }[] | null) ?? [];
  if (cards.length === 0) return;
  const view = await viewOf(tx.stores, row);
  const bot = await tx.stores.bots.get(row.bot_id);
  for (const c of cards) {
    const m = await tx.stores.messages.get(c.message_id);
    if (!m) continue;
    const updated = {
      ...m,
      content: cardText(row, view, bot?.name ?? 'bot', outcome),
      content_html: null,
      actions: null,
      edited_at: tx.now,
    };
    await tx.stores.messages.update(m.id, updated);
    tx.emit('message.updated', m.org_id, {
      ...messageEventData(updated),
      previous_content: m.content,
      edited_by_type: 'bot',
      edited_by_id: m.sender_id,
    });
  }
}

/**
 * Tells the outcome, once (a compare-and-set on resolved_at in the same transaction): the cards are
 * edited to say who decided and what happened (their buttons removed), and the bot gets
 * pending_action.resolved.
 */
export async function resolve(services: Services, id: string): Promise<void> {
  await write(outsideRequest(services), async (tx) => {
    if (!(await tx.stores.pendingActions.markResolved(id, tx.now))) return;
    const row = (await tx.stores.pendingActions.get(id))!;
    const decider = row.decided_by ? await tx.stores.users.get(row.decided_by) : undefined;
    const by = decider ? ` by ${decider.display_name}` : '';
    const withdrawn = row.status === 'rejected' && row.decided_by === null;
    const outcome =
      (withdrawn
        ? `↩️ Withdrawn by the bot`
        : `${OUTCOME[row.status] ?? row.status}${row.status === 'expired' ? '' : by}`) +
      (row.decided_at ? ` at ${row.decided_at}` : '') +
      (row.status === 'executed' ? ': done.' : row.status === 'failed' ? `: ${row.error ?? ''}` : '.');
    await editCards(tx, row, outcome);
    tx.emit('pending_action.resolved', row.org_id, {
      pending_action_id: row.id,
      bot_id: row.bot_id,
      tool: row.tool,
      status: row.status as 'rejected' | 'expired' | 'executed' | 'failed',
      decided_by: row.decided_by,
      decided_at: row.decided_at,
      result: json(row.result),
      error: row.error,
    });
  });
}

/** The `error` of an action its own bot withdrew (MCP tasks/cancel): status rejected, no decider. */
export const WITHDRAWN = 'withdrawn by the agent (MCP tasks/cancel) before anyone decided';

/**
 * The bot withdraws its own pending action (MCP tasks/cancel): pending → rejected with no decider,
 * then the outcome is told like any other (cards edited, pending_action.resolved). False when it was
 * no longer pending (decided, expired, executed: nothing changes).
 */
export async function withdrawOwn(services: Services, id: string): Promise<boolean> {
  const won = await write(outsideRequest(services), (tx) =>
    tx.stores.pendingActions.withdraw(id, WITHDRAWN, tx.now),
  );
  if (won) await resolve(services, id);
  return won;
}

/**
 * Finishes what requests left (a lifecycle service, app.ts): approved actions a crash left
 * unexecuted (at start all of them, later those decided a while ago, so as not to race the request
 * that is running them — harmless, only slower), pending ones past their expiry, outcomes not yet told.
 */
export class ApprovalSweeper {
  readonly name = 'approval sweeper';
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;

  constructor(
    private readonly services: Services,
    private readonly intervalMs = 15_000,
  ) {}

  start(): void {
    this.#running = this.sweep(true);
    this.#timer = setInterval(() => void (this.#running ??= this.sweep(false)), this.intervalMs);
    this.#timer.unref();
  }

  async sweep(all: boolean): Promise<void> {
    const { services } = this;
    try {
      const now = services.clock.nowIso();
      const settle = new Date(services.clock.now() - 30_000).toISOString();
      for (const r of await services.storage.stores.pendingActions.listUnfinished(now, 100)) {
        if (r.status === 'approved') {
          if (!all && (r.decided_at ?? '') > settle) continue;
          await execute(services, r.id);
          await resolve(services, r.id);
        } else if (r.status === 'pending') await expireAndResolve(services, r);
        else await resolve(services, r.id);
      }
    } catch (err) {
      services.log.warn({ err }, 'approval sweep failed');
    } finally {
      this.#running = undefined;
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#running;
  }
}
