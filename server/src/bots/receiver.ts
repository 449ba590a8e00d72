import type { InProcessEnvelope, InProcessReceiver, InProcessResult } from '../delivery/in-process.js';
import type { BuiltinBotRuntime } from './runtime.js';

/**
 * The built-in bots' side of the in-process transport (delivery/in-process.ts): the delivery worker
 * hands it the deliveries of rows with `builtin` set, and it dispatches each envelope to the bot's
 * definition: `action.invoked` to `onAction`, every other event to `onEvent`; a bot without the handler
 * ignores it (recorded as delivered). A handler that throws fails the attempt, which is retried on the
 * usual schedule, so handlers must tolerate a second delivery of the same event (use its id).
 */
export class BuiltinReceiver implements InProcessReceiver {
  constructor(private readonly runtime: BuiltinBotRuntime) {}

  deliver(builtin: string, envelope: InProcessEnvelope): Promise<InProcessResult> {
    return this.runtime.deliver(builtin, envelope);
  }

  receivesFromOrganization(builtin: string, type: string, data: Record<string, unknown>): boolean {
    return this.runtime.receivesFromOrganization(builtin, type, data);
  }
}
