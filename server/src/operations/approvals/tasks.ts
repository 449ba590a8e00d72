import type { CommittedEvents } from '../../events/committed.js';
import type { PendingActionRow } from '../../storage/schema.js';
import type { ClockTimer } from '../../runtime/clock.js';
import type { Services } from '../context.js';
import { withdrawOwn, WITHDRAWN } from './pending-actions.js';

/**
 * A bot's pending actions seen as MCP tasks (transports/mcp/tasks.ts; docs/MCP.md, "Approval"): the
 * task IS the pending action (taskId = its id, no storage of its own), seen only by the API key that
 * made the call (any other: undefined, "not found").
 *
 * Status map: pending → working; approved (not yet run) → working; executed → completed; rejected,
 * expired (or pending past its expiry), failed → failed; withdrawn by the agent (cancelOwnTask) →
 * cancelled.
 */

/** The poll interval suggested to clients, and the store re-read of a waiting task. */
export const POLL_MS = 5_000;

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';
export interface Task {
  taskId: string;
  status: TaskStatus;
  statusMessage: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttl: number | null;
  pollInterval?: number;
}

/** Who may approve, in words: the named approvers (the bot's owner first), or the organization's admins. */
async function approversOf(services: Services, row: PendingActionRow): Promise<string> {
  const names: string[] = [];
  for (const id of (JSON.parse(row.approvers) as string[]).slice(0, 5)) {
    const u = await services.storage.stores.users.get(id);
    if (u && u.org_id === row.org_id) names.push(u.display_name);
  }
  return names.length > 0 ? `${names.join(', ')} or an organization admin` : 'an organization admin';
}

export const TERMINAL = new Set<TaskStatus>(['completed', 'failed', 'cancelled']);

/** The task a pending action is, at `now` (a pending one past its expiry has failed already). */
async function taskOf(services: Services, row: PendingActionRow, now: string): Promise<Task> {
  const decider = async () => {
    if (!row.decided_by) return '';
    const u = await services.storage.stores.users.get(row.decided_by);
    return ` by ${u?.display_name ?? row.decided_by}`;
  };
  let status: TaskStatus;
  let statusMessage: string;
  switch (row.status) {
    case 'pending':
      if (row.expires_at <= now) {
        status = 'failed';
        statusMessage = `Expired: no one approved it before ${row.expires_at}; it was not run`;
      } else {
        status = 'working';
        statusMessage = `Waiting for approval by ${await approversOf(services, row)}, until ${row.expires_at} (pending action ${row.id})`;
      }
      break;
    case 'approved':
      status = 'working';
      statusMessage = `Approved${await decider()} at ${row.decided_at}: running`;
      break;
    case 'executed':
      status = 'completed';
      statusMessage = `Approved${await decider()} and run at ${row.executed_at}`;
      break;
    case 'rejected':
      if (row.decided_by === null && row.error === WITHDRAWN) {
        status = 'cancelled';
        statusMessage = `Cancelled: ${WITHDRAWN}; it was not run`;
      } else {
        status = 'failed';
        statusMessage = `Rejected${await decider()} at ${row.decided_at}; it was not run`;
      }
      break;
    case 'expired':
      status = 'failed';
      statusMessage = `Expired: no one approved it before ${row.expires_at}; it was not run`;
      break;
    case 'failed':
      status = 'failed';
      statusMessage = `Approved${await decider()}, but running it failed: ${row.error ?? 'unknown error'}`;
      break;
  }
  const last = [row.requested_at, row.decided_at, row.executed_at].filter((x): x is string => !!x).sort();
  return {
    taskId: row.id,
    status,
    statusMessage,
    createdAt: row.requested_at,
    lastUpdatedAt: last[last.length - 1]!,
    // Pending actions are kept (they are the approvals' record): no retention limit.
    ttl: null,
    ...(TERMINAL.has(status) ? {} : { pollInterval: POLL_MS }),
  };
}

/** A task and what its result is made of (for a completed one: the tool, its input and the result). */
export interface OwnTask {
  task: Task;
  tool: string;
  input: Record<string, unknown>;
  result: unknown;
}

async function ownOf(services: Services, row: PendingActionRow): Promise<OwnTask> {
  return {
    task: await taskOf(services, row, services.clock.nowIso()),
    tool: row.tool,
    input: JSON.parse(row.input) as Record<string, unknown>,
    result: row.result === null ? null : (JSON.parse(row.result) as unknown),
  };
}

async function loadOwn(services: Services, keyId: string, id: string): Promise<PendingActionRow | undefined> {
  if (!/^[0-9a-f-]{36}$/.test(id)) return undefined;
  const row = await services.storage.stores.pendingActions.get(id);
  return row && row.key_id === keyId ? row : undefined;
}

/** The key's task `id`, or undefined (none, or another key's). */
export async function getOwnTask(
  services: Services,
  keyId: string,
  id: string,
): Promise<OwnTask | undefined> {
  const row = await loadOwn(services, keyId, id);
  return row ? ownOf(services, row) : undefined;
}

/** The key's tasks, newest first; `next` is where the following page starts, when there may be one. */
export async function listOwnTasks(
  services: Services,
  orgId: string,
  keyId: string,
  page: { limit: number; after?: { requested_at: string; id: string } | undefined },
): Promise<{ tasks: Task[]; next?: { requested_at: string; id: string } }> {
  const rows = await services.storage.stores.pendingActions.listForKey(orgId, keyId, page);
  const now = services.clock.nowIso();
  const tasks: Task[] = [];
  for (const r of rows) tasks.push(await taskOf(services, r, now));
  const last = rows[rows.length - 1];
  return rows.length === page.limit && last
    ? { tasks, next: { requested_at: last.requested_at, id: last.id } }
    : { tasks };
}

/**
 * The key's task `id` once terminal, or as it is after `waitMs`: woken by the action's
 * pending_action.resolved among the committed events (every instance's, from the outbox), and
 * re-reading the store every POLL_MS besides (an outcome decided elsewhere, an event missed); `gone`
 * (the client went away) ends the wait too.
 */
export async function waitOwnTask(
  services: Services,
  events: CommittedEvents,
  keyId: string,
  id: string,
  waitMs: number,
  gone?: AbortSignal,
): Promise<OwnTask | undefined> {
  const { clock } = services;
  const deadline = clock.now() + waitMs;
  for (;;) {
    let wake: () => void = () => undefined;
    const woken = new Promise<void>((r) => (wake = r));
    const off = events.subscribe((evs) => {
      if (
        evs.some(
          (e) =>
            e.type === 'pending_action.resolved' &&
            (e.data as { pending_action_id?: string }).pending_action_id === id,
        )
      )
        wake();
    });
    const onGone = () => wake();
    gone?.addEventListener('abort', onGone);
    try {
      // Read after subscribing: an outcome committed in between is either read here or heard.
      const row = await loadOwn(services, keyId, id);
      if (!row) return undefined;
      const own = await ownOf(services, row);
      const left = deadline - clock.now();
      if (TERMINAL.has(own.task.status) || left <= 0 || gone?.aborted) return own;
      // On the server's clock (a test clock moves it on).
      let timer: ClockTimer | undefined;
      await Promise.race([
        woken,
        new Promise<void>((r) => (timer = clock.setTimeout(r, Math.min(POLL_MS, left)))),
      ]);
      clock.clearTimeout(timer);
    } finally {
      off();
      gone?.removeEventListener('abort', onGone);
    }
  }
}

/**
 * The agent withdraws its task (tasks/cancel): a pending action is rejected with no decider
 * (withdrawOwn); `cancelled` false when it was no longer pending (the task as it is).
 */
export async function cancelOwnTask(
  services: Services,
  keyId: string,
  id: string,
): Promise<{ cancelled: boolean; own: OwnTask } | undefined> {
  const row = await loadOwn(services, keyId, id);
  if (!row) return undefined;
  const cancelled = row.status === 'pending' && (await withdrawOwn(services, id));
  const now = (await loadOwn(services, keyId, id)) ?? row;
  return { cancelled, own: await ownOf(services, now) };
}
