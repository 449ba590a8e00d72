/**
 * The in-process transport: deliveries to built-in bots (rows of `bots` with `builtin` set) are handed
 * to their code in this process instead of being POSTed. Everything else about a delivery stays the
 * same (a row per event and bot, attempts recorded in the delivery log, retries, at least once), so a
 * built-in bot receives its events from the same subscription engine as a custom bot.
 *
 * `delivery/` defines the interface; the built-in bot runtime (`bots/`) implements it and `app.ts`
 * wires the two together (delivery must not import bots).
 */

/** What the built-in bot receives: the same envelope a webhook body carries (without a signature). */
export interface InProcessEnvelope {
  event_type: string;
  event_id: string;
  /** The event's time (ISO 8601). */
  timestamp: string;
  bot_id: string;
  data: unknown;
  /** The id every attempt of this delivery shares (the `webhook-id` of HTTP deliveries). */
  delivery_id: string;
}

/** The outcome, recorded like an HTTP attempt: `ok: false` is retried on the usual schedule. */
export interface InProcessResult {
  ok: boolean;
  /** Shown in the delivery log (like an HTTP response snippet or error). */
  detail?: string;
}

export interface InProcessReceiver {
  /** The built-in bot's handler for one delivery; throwing counts as a failed attempt. */
  deliver(builtin: string, envelope: InProcessEnvelope): Promise<InProcessResult>;
  /**
   * Whether the built-in bot `builtin` receives this event although it is not a member where it
   * happened (a system bot's `orgEvents`, e.g. the notifications bot hears every mention in its
   * organization). Called by the fan-out for subscribed types only; without it (or false), built-in
   * bots receive events only where they are members, as webhooks do.
   */
  receivesFromOrganization?(builtin: string, type: string, data: Record<string, unknown>): boolean;
}
