/**
 * @workroom/sdk — a Workroom bot in a few lines: `WorkroomClient` (REST, with time-outs, retries and
 * idempotency), `WebhookReceiver` (verifies, deduplicates, answers at once, then runs handlers) and
 * `verifySignature` for receivers built on another framework.
 */
export { WorkroomClient, type WorkroomClientOptions, type ToolName } from './client.js';
export { WorkroomError } from './errors.js';
export type { CallOptions, RetryOptions } from './http.js';
export {
  WebhookReceiver,
  type WebhookReceiverOptions,
  type Handler,
  type HandlerContext,
  type CommandHandler,
  type ActionHandler,
  type CommandReply,
  type Logger,
} from './webhooks/receiver.js';
export { SocketReceiver, type SocketReceiverOptions, type SocketHandlerContext } from './socket/receiver.js';
export { UpgradeRefused } from './socket/ws.js';
export {
  verifySignature,
  type VerifyOptions,
  type VerifyResult,
  type HeaderBag,
  type SignatureKind,
} from './webhooks/verify.js';
export type * from './events.js';
export type * from './types.js';
export type { paths, components, operations } from './generated/api.js';
