import type { ServerResponse } from 'node:http';
import type { Server } from 'node:net';
import type { CommittedEvents } from '../../events/committed.js';
import type { BotActor } from '../../operations/context.js';
import { INVALID_PARAMS, RpcError, type JsonRpcId, type Params } from './jsonrpc.js';
import { SSE_HEADERS, SseStream } from './sse.js';

/**
 * `subscriptions/listen` (2026-07-28), the modern era's replacement of the GET stream: a POST whose
 * SSE answer stays open and carries the change notifications the client opted in to. streamable-http
 * .mdx: "Long-lived notification streams are obtained by sending a subscriptions/listen request. The
 * server's response is itself an SSE stream that stays open and delivers the change notifications the
 * client opted in to". It carries what the GET stream carries: `notifications/resources/list_changed`
 * when the bot joins or leaves a channel or project, a topic appears in one of its projects, or a DM
 * room with it is created. The tool list never changes while a server runs, so `toolsListChanged` is
 * not honoured (the acknowledgement says so); prompts and resource subscriptions do not exist here.
 *
 * The stream opens with `notifications/subscriptions/acknowledged` (the honoured filter); every
 * notification carries `_meta["io.modelcontextprotocol/subscriptionId"]`, the listen request's id;
 * when the server shuts down, the stream ends with the listen request's result (a graceful close).
 * A key holds at most `perKey` streams on an instance: a new one ends its oldest.
 */
const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

interface Listener {
  botId: string;
  keyId: string;
  id: JsonRpcId;
  stream: SseStream;
}

/** The bots whose list of resources an event changes. */
export function botsWithChangedResourcesOf(e: { type: string; data: Record<string, unknown> }): string[] {
  if (e.type === 'member.joined' || e.type === 'member.left') {
    return e.data.member_type === 'bot' ? [String(e.data.member_id)] : [];
  }
  return e.type === 'resources.changed' ? (e.data.bot_ids as string[]) : [];
}

/** The bots whose list of resources a batch of events changes. */
export function botsWithChangedResources(
  events: readonly { type: string; data: Record<string, unknown> }[],
): string[] {
  return events.flatMap(botsWithChangedResourcesOf);
}

export class ListenHub {
  readonly #byBot = new Map<string, Set<Listener>>();
  readonly #byKey = new Map<string, Listener[]>();
  #unsubscribe: (() => void) | undefined;

  constructor(
    private readonly bus: CommittedEvents,
    private readonly perKey: number,
  ) {}

  /** Checks the request's filter; throws -32602 for a malformed one. */
  static filterOf(params: Params | undefined): { resourcesListChanged?: true } {
    const f = params?.notifications;
    if (f === null || typeof f !== 'object' || Array.isArray(f)) {
      throw new RpcError(INVALID_PARAMS, 'Invalid params: notifications must be an object (the filter)', {
        field: 'notifications',
      });
    }
    return (f as Record<string, unknown>).resourcesListChanged === true ? { resourcesListChanged: true } : {};
  }

  /** Opens the stream on `res` and keeps it until the client goes or the server stops. */
  open(
    res: ServerResponse,
    socket: { server?: Server },
    actor: BotActor,
    id: JsonRpcId,
    filter: { resourcesListChanged?: true },
  ): void {
    const meta = { [SUBSCRIPTION_ID]: id };
    res.writeHead(200, SSE_HEADERS);
    const farewell = JSON.stringify({ jsonrpc: '2.0', id, result: { resultType: 'complete', _meta: meta } });
    const listener: Listener = {
      botId: actor.botId,
      keyId: actor.keyId,
      id,
      stream: new SseStream(res, socket, () => this.#remove(listener), farewell),
    };
    listener.stream.send(
      JSON.stringify({
        jsonrpc: '2.0',
        method: 'notifications/subscriptions/acknowledged',
        params: { notifications: filter, _meta: meta },
      }),
    );
    if (!filter.resourcesListChanged) return; // nothing to deliver; the stream stays open, as asked
    const mine = this.#byKey.get(actor.keyId) ?? [];
    while (mine.length >= this.perKey) mine.shift()!.stream.end();
    mine.push(listener);
    this.#byKey.set(actor.keyId, mine);
    let set = this.#byBot.get(actor.botId);
    if (!set) this.#byBot.set(actor.botId, (set = new Set()));
    set.add(listener);
    this.#unsubscribe ??= this.bus.subscribe((events) => {
      for (const botId of botsWithChangedResources(events)) {
        for (const l of this.#byBot.get(botId) ?? []) {
          l.stream.send(
            JSON.stringify({
              jsonrpc: '2.0',
              method: 'notifications/resources/list_changed',
              params: { _meta: { [SUBSCRIPTION_ID]: l.id } },
            }),
          );
        }
      }
    });
  }

  #remove(l: Listener): void {
    const set = this.#byBot.get(l.botId);
    set?.delete(l);
    if (set?.size === 0) this.#byBot.delete(l.botId);
    const mine = this.#byKey.get(l.keyId);
    if (mine) {
      const i = mine.indexOf(l);
      if (i >= 0) mine.splice(i, 1);
      if (mine.length === 0) this.#byKey.delete(l.keyId);
    }
    if (this.#byBot.size === 0) {
      this.#unsubscribe?.();
      this.#unsubscribe = undefined;
    }
  }
}
