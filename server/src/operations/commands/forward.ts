import { randomUUID } from 'node:crypto';
import type { Service } from '../../runtime/lifecycle.js';
import { COMMAND_CHANNEL, type CommandForwardStore } from '../../storage/command-forwards.js';
import type { Services } from '../context.js';
import {
  socketCommandResult,
  type CommandForwarding,
  type DispatchResult,
  type SocketCommandEnvelope,
  type SocketCommands,
} from './dispatch.js';
import type { Invocation } from './response-token.js';

/**
 * Slash commands for a bot whose socket is on another instance of the same PostgreSQL database
 * (docs/SOCKET.md, "Several instances"). The instance serving the user's request writes the command in
 * a row (command_forwards: the command may be larger than a NOTIFY's 8000 bytes) and NOTIFYs its id; an
 * instance holding a socket of the bot claims the row, sends the command over the socket, and on the
 * ack marks the row acked, posts the bot's reply (as a single instance does) and writes the outcome,
 * which it NOTIFYs back. The requester waits at most the webhook time-out plus FORWARD_MARGIN_MS; then it
 * withdraws the row (deleted unless acked), so that a holder whose bot acks later posts nothing (as a
 * single instance ignores a late ack) and the user's answer is `timeout`.
 */

/** A command no instance claimed within this long goes the way of a bot with no socket. */
export const CLAIM_MS = 2000;
/** What the requester adds to the webhook time-out for the round trip and the holder's reply. */
export const FORWARD_MARGIN_MS = 2000;
/** The row is read again this often besides the NOTIFYs (a notification lost while reconnecting). */
const POLL_MS = 500;

type Listen = (channel: string, onPayload: (payload: string) => void) => Promise<() => Promise<void>>;

interface Waiter {
  woken: boolean;
  wake?: () => void;
}

export class CommandForwarder implements Service, CommandForwarding {
  readonly name = 'command-forwards';
  /** This instance, as the holder of the rows it claims. */
  readonly #holder = randomUUID();
  readonly #waiters = new Map<string, Waiter>();
  readonly #holding = new Set<Promise<void>>();
  #schema: string | undefined;
  #unlisten: (() => Promise<void>) | undefined;
  #stopped = false;

  constructor(
    private readonly services: Services,
    private readonly store: CommandForwardStore,
    private readonly sockets: SocketCommands,
    private readonly listen: Listen,
  ) {}

  /** Forwarded commands this instance holds now (claimed or not yet): tests wait for none. */
  get holding(): number {
    return this.#holding.size;
  }

  async start(): Promise<void> {
    this.#stopped = false;
    try {
      this.#schema = await this.store.schema();
      this.#unlisten = await this.listen(COMMAND_CHANNEL, (payload) => this.#onPayload(payload));
    } catch (err) {
      // Requests still go out (their outcome is polled), but this instance hears none: a command for
      // a bot whose socket is here is left unclaimed by it, and goes as for a bot without a socket.
      this.services.log.warn({ err }, 'commands: cannot LISTEN; forwarded commands are not taken here');
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#unlisten?.();
    for (const w of this.#waiters.values()) w.wake?.();
    await Promise.allSettled([...this.#holding]);
  }

  #onPayload(payload: string): void {
    const [schema, kind, id, botId] = payload.split(' ');
    if (schema !== this.#schema || !id || this.#stopped) return;
    if (kind === 'done') {
      const w = this.#waiters.get(id);
      if (w) {
        w.woken = true;
        w.wake?.();
      }
    } else if (kind === 'request' && botId && this.sockets.connected(botId)) {
      const p = this.#hold(id).catch((err: unknown) =>
        this.services.log.error({ err, invocation: id }, 'commands: a forwarded command failed'),
      );
      this.#holding.add(p);
      void p.finally(() => this.#holding.delete(p));
    }
  }

  // --- the instance holding the socket ---

  async #hold(id: string): Promise<void> {
    const row = await this.store.claim(id, this.#holder);
    if (!row) return; // another instance took it, or the requester withdrew
    const { inv, envelope } = JSON.parse(row.envelope) as {
      inv: Invocation;
      envelope: SocketCommandEnvelope;
    };
    const timeoutMs = this.services.commands.timeoutMs;
    const t0 = performance.now();
    let result: DispatchResult;
    try {
      const r = await this.sockets.command(envelope, timeoutMs);
      if (r.kind === 'acked' && !(await this.store.acked(id, this.#holder))) {
        this.services.log.info(
          { invocation: id },
          'commands: the bot acked after the requesting instance answered timeout; no reply posted',
        );
        return;
      }
      result = await socketCommandResult(
        this.services,
        inv,
        r,
        Math.round(performance.now() - t0),
        timeoutMs,
      );
    } catch (err) {
      this.services.log.error({ err, invocation: id }, 'commands: a forwarded command failed');
      result = {
        delivery: {
          status: 'failed',
          http_status: null,
          duration_ms: Math.round(performance.now() - t0),
          message: 'The instance holding the bot’s socket failed to deliver the command',
        },
        reply: null,
        reply_error: null,
      };
    }
    if (!(await this.store.finish(id, this.#holder, JSON.stringify(result)))) {
      this.services.log.info(
        { invocation: id },
        'commands: the requesting instance gave up before the outcome',
      );
    }
  }

  // --- the instance serving the user's request ---

  /**
   * Sends the command to the instance holding the bot's socket and waits for its outcome; `unclaimed`
   * when no instance took it within CLAIM_MS (the socket closed meanwhile: the caller goes on as for a
   * bot without a socket).
   */
  async forward(
    inv: Invocation,
    envelope: SocketCommandEnvelope,
    timeoutMs: number,
  ): Promise<DispatchResult | 'unclaimed'> {
    const id = inv.invocationId;
    const t0 = performance.now();
    const claimBy = t0 + Math.min(CLAIM_MS, timeoutMs);
    const deadline = t0 + timeoutMs + FORWARD_MARGIN_MS;
    const waiter: Waiter = { woken: false };
    this.#waiters.set(id, waiter);
    const gaveUp = (status: 'timeout' | 'delivered', message: string): DispatchResult => ({
      delivery: { status, http_status: null, duration_ms: Math.round(performance.now() - t0), message },
      reply: null,
      reply_error:
        status === 'delivered'
          ? 'The bot acknowledged on the instance holding its socket, which had not posted its reply in time'
          : null,
    });
    try {
      await this.store.request(id, inv.botId, JSON.stringify({ inv, envelope }), this.services.clock.now());
      for (;;) {
        waiter.woken = false;
        const row = await this.store.read(id);
        if (!row) return gaveUp('timeout', 'The forwarded command was lost');
        if (row.state === 'done' && row.result !== null) return JSON.parse(row.result) as DispatchResult;
        const now = performance.now();
        if (row.state === 'pending' && now >= claimBy) {
          if (await this.store.withdraw(id, ['pending'])) return 'unclaimed';
          continue;
        }
        if (now >= deadline) {
          if (await this.store.withdraw(id, ['pending', 'claimed'])) {
            return gaveUp(
              'timeout',
              `The bot did not acknowledge the command over its socket within ${timeoutMs} ms`,
            );
          }
          // Acked: the holder is posting the reply; it gets one more margin.
          if (now >= deadline + FORWARD_MARGIN_MS)
            return gaveUp('delivered', 'The bot received the command over its socket');
        }
        if (this.#stopped) return gaveUp('timeout', 'The server is shutting down');
        const next =
          row.state === 'pending' ? claimBy : now < deadline ? deadline : deadline + FORWARD_MARGIN_MS;
        await this.#wait(waiter, Math.max(1, Math.min(POLL_MS, next - now)));
      }
    } finally {
      this.#waiters.delete(id);
      await this.store
        .remove(id)
        .catch((err: unknown) =>
          this.services.log.warn(
            { err, invocation: id },
            'commands: a forwarded command’s row was not removed',
          ),
        );
    }
  }

  #wait(waiter: Waiter, ms: number): Promise<void> {
    if (waiter.woken) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        waiter.wake = undefined;
        resolve();
      }
      waiter.wake = done;
    });
  }
}
