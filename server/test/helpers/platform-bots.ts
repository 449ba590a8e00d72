import { expect, vi } from 'vitest';
import type { TestClock } from '../../src/runtime/clock.js';
import { expectStatus, type Api } from './client.js';
import type { TestServer } from './server.js';
import type { UserHandle } from './world.js';

/**
 * Helpers of the platform bots' end-to-end tests (stand-up, collection, task notifications): what a
 * user sees through the public API — command answers, channel messages, their DMs with a bot.
 */

export interface Msg {
  id: string;
  content: string;
  bot_id: string | null;
  sender_type: string;
  sender_id: string;
  created_at: string;
  channel_id: string | null;
  dm_room_id: string | null;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs a slash command as a user (202 for a bot's command). */
export async function command(api: Api, text: string, where: Record<string, string> = {}) {
  return expectStatus(await api.post('/api/commands/execute', { text, ...where }), 202) as {
    delivery: { status: string; message: string };
    reply: { ephemeral: boolean; content: string; message_id: string | null } | null;
    reply_error: string | null;
  };
}

/** The bot's answer to a command (posted or ephemeral); fails when there is none. */
export async function answer(api: Api, text: string, where: Record<string, string> = {}) {
  const r = await command(api, text, where);
  expect(r.delivery.status, r.delivery.message).toBe('delivered');
  expect(r.reply_error).toBeNull();
  expect(r.reply).not.toBeNull();
  return r.reply!;
}

export async function channelMessages(api: Api, channelId: string): Promise<Msg[]> {
  return expectStatus(await api.get(`/api/channels/${channelId}/messages`, { query: { limit: 100 } }), 200)
    .items as Msg[];
}

/** The id of a built-in bot of the user's organization, from the slash palette. */
export async function builtinBotId(api: Api, command: string): Promise<string> {
  const items = expectStatus(await api.get('/api/commands'), 200).items as {
    command: string;
    bot_id?: string;
  }[];
  const c = items.find((x) => x.command === command);
  if (!c?.bot_id) throw new Error(`no /${command} in the palette`);
  return c.bot_id;
}

/** The user's DM room with the bot (opened by the user if it does not exist yet). */
export async function dmRoom(user: UserHandle, botId: string): Promise<string> {
  return expectStatus(await user.api.post('/api/dm-rooms', { bot_ids: [botId] }), 201).id as string;
}

/** The bot's messages in its DM with the user, oldest first. */
export async function dmsFromBot(user: UserHandle, botId: string): Promise<Msg[]> {
  const rooms = expectStatus(await user.api.get('/api/dm-rooms'), 200).items as {
    id: string;
    members: { type: string; id: string }[];
  }[];
  const room = rooms.find(
    (r) => r.members.length === 2 && r.members.some((m) => m.type === 'bot' && m.id === botId),
  );
  if (!room) return [];
  const items = expectStatus(
    await user.api.get(`/api/dm-rooms/${room.id}/messages`, { query: { limit: 100 } }),
    200,
  ).items as Msg[];
  return items.filter((m) => m.bot_id === botId).reverse();
}

/** Sends a DM to the bot as the user. */
export async function dmToBot(user: UserHandle, botId: string, content: string): Promise<Msg> {
  const room = await dmRoom(user, botId);
  return expectStatus(await user.api.post(`/api/dm-rooms/${room}/messages`, { content }), 201) as Msg;
}

/** Polls until `f` answers something truthy (or fails after `ms`). */
export async function waitFor<T>(
  what: string,
  f: () => Promise<T | undefined | null | false>,
  ms = 60_000,
): Promise<T> {
  try {
    return (await vi.waitUntil(f, { timeout: ms, interval: 150 })) as T;
  } catch (err) {
    // vi.waitUntil stops at once on an error of `f` (as this loop did): only a time-out is renamed.
    if (err instanceof Error && /timed out/i.test(err.message)) {
      throw new Error(`timed out waiting for ${what}`, { cause: err });
    }
    throw err;
  }
}

/** Waits until the bot has sent the user a DM containing `text` (counting those sent before `after`). */
export async function waitForDm(
  user: UserHandle,
  botId: string,
  text: string,
  count = 1,
  ms = 90_000,
): Promise<Msg[]> {
  return waitFor(
    `${count}× DM "${text.slice(0, 40)}"`,
    async () => {
      const hits = (await dmsFromBot(user, botId)).filter((m) => m.content.includes(text));
      return hits.length >= count ? hits : null;
    },
    ms,
  );
}

/**
 * The next whole minute at least `leadMs` ahead, as HH:MM in UTC and its instant: schedules are set
 * in minutes, so a test waits for the next minute boundary (at most a minute and `leadMs`).
 */
export function nextMinute(leadMs = 12_000): { hhmm: string; at: number } {
  const at = Math.ceil((Date.now() + leadMs) / 60_000) * 60_000;
  const d = new Date(at);
  const hhmm = `${String(d.getUTCHours()).padStart(2, '0')}:${String(d.getUTCMinutes()).padStart(2, '0')}`;
  return { hhmm, at };
}

/**
 * Moves the server's test clock on to `at` (epoch ms or ISO 8601) once its scheduler runs no job: a
 * jump is taken between two steps of a test, never while a job is finishing (its lease, counted in
 * clock time, would run out under it). Real time keeps flowing; the jobs now due run at once.
 */
export async function moveClockTo(srv: TestServer, clock: TestClock, at: number | string): Promise<void> {
  // Idle in this process and in the table (a claim just committed is `running` before it is started).
  const running = async () =>
    srv.app.scheduler.running().length +
    (
      await srv.app.services.storage.transaction((s) =>
        s.db.selectFrom('scheduled_jobs').select('id').where('state', '=', 'running').limit(1).execute(),
      )
    ).length;
  await expect.poll(running, { timeout: 20_000, interval: 20 }).toBe(0);
  clock.set(at);
}

/**
 * Resolves once every job of the bot that is due by the test clock has finished (done, failed or
 * cancelled) and the scheduler runs none: whatever those jobs post has been posted. The end of a
 * "nothing more arrives" check, instead of a quiet period.
 */
export async function jobsSettled(srv: TestServer, clock: TestClock, botId: string): Promise<void> {
  const stores = srv.app.services.storage.stores;
  await expect
    .poll(
      async () => {
        const open = [
          ...(await stores.scheduledJobs.listForBot(botId, { state: 'pending', limit: 100 })),
          ...(await stores.scheduledJobs.listForBot(botId, { state: 'running', limit: 100 })),
        ].filter((j) => j.state === 'running' || Date.parse(j.run_at) <= clock.now());
        return open.length + srv.app.scheduler.running().length;
      },
      { timeout: 20_000, interval: 50 },
    )
    .toBe(0);
}
