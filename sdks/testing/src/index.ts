/**
 * @workroom/testing — test a Workroom bot against a real, throwaway Workroom (`workroom harness`: the
 * built server on a temporary SQLite, 127.0.0.1, a test clock moved over its stdin). docs/TESTING-BOTS.md.
 *
 *   const wr = await startWorkroom();
 *   const ws = await wr.workspace({ users: ['ann'], channels: ['general'], bots: [{ name: 'echo', commands: ['echo'] }] });
 *   // …start the bot with ws.bots.echo.key…
 *   await wr.as('ann').post('general', '!echo hi');
 *   expect((await wr.nextMessage('general', { from: 'echo' })).content).toBe('hi');
 *   await wr.stop();
 */
export {
  startWorkroom,
  Workroom,
  UserSession,
  WorkroomApiError,
  type StartOptions,
  type Workspace,
  type WorkspaceSpec,
  type BotSpec,
  type UserHandle,
  type BotHandle,
  type ContainerHandle,
  type ProjectHandle,
  type Container,
  type Sender,
  type Message,
  type CommandAnswer,
  type WaitOptions,
} from './workroom.js';
export { findServer } from './process.js';
export { toMs } from './duration.js';
