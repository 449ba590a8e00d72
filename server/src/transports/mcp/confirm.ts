import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { AppError } from '../../domain/errors.js';
import { subkey } from '../../domain/secrets.js';
import { INVALID_PARAMS, RpcError, type Params } from './jsonrpc.js';
import { CLIENT_CAPABILITIES_META } from './modern.js';

/**
 * The agent's user confirms a call (grant `confirm`, docs/MCP.md "Confirmation by the agent's user"),
 * with the 2026-07-28 Multi Round-Trip Request shape: basic/utilities/mrtr.mdx — the server answers the
 * call with `resultType: "input_required"`, `inputRequests` (here one `elicitation/create` form with a
 * yes/no field) and an opaque `requestState`; "the client MUST include this value in the RequestState
 * property when retrying the original request", with `inputResponses` keyed as the requests were.
 * "Servers MUST NOT send input requests of a kind the client has not declared": the question is asked
 * only of a client whose `_meta` clientCapabilities declare `elicitation`.
 *
 * Nothing is kept between the rounds (any instance takes the retry): `requestState` is signed and
 * binds the API key, the tool and its exact arguments, for 10 minutes — a confirmation of one call
 * cannot run another, and a key or argument changed on the retry is refused.
 */
const STATE_VERSION = 'wrmc1';
const TTL_MS = 10 * 60_000;
const STATE_SHAPE = /^wrmc1\.(\d{1,15})\.([0-9A-Za-z_-]{43})$/;
const FIELD = 'confirm';

/** JSON with sorted keys: the arguments as the state binds them, whatever order a client sends. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

export class ConfirmationSigner {
  readonly #key: Buffer;

  constructor(encryptionKey: Buffer) {
    this.#key = subkey(encryptionKey, 'workroom mcp confirm state v1');
  }

  #mac(keyId: string, tool: string, args: unknown, expiresAt: number): string {
    const digest = createHash('sha256').update(canonical(args)).digest('hex');
    return createHmac('sha256', this.#key)
      .update(`${STATE_VERSION}\n${keyId}\n${tool}\n${digest}\n${expiresAt}`)
      .digest('base64url');
  }

  issue(keyId: string, tool: string, args: unknown, nowMs: number): string {
    const expiresAt = nowMs + TTL_MS;
    return `${STATE_VERSION}.${expiresAt}.${this.#mac(keyId, tool, args, expiresAt)}`;
  }

  /** Whether `state` was issued for this key, tool and arguments and has not expired. */
  verify(state: string, keyId: string, tool: string, args: unknown, nowMs: number): boolean {
    const m = STATE_SHAPE.exec(state);
    if (!m) return false;
    const expiresAt = Number(m[1]);
    if (expiresAt <= nowMs) return false;
    const expected = Buffer.from(this.#mac(keyId, tool, args, expiresAt));
    const given = Buffer.from(m[2]!);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }
}

export type Confirmation =
  | { kind: 'confirmed' }
  | { kind: 'declined'; action: string }
  /** The input_required result to answer (without resultType's siblings the transport adds). */
  | { kind: 'ask'; result: string };

/**
 * What a call of `tool` whose grant needs confirmation gets: run (the retry carries a valid state and
 * the user's yes), a decline (the user said no or cancelled: nothing runs), or the question. Throws
 * `confirmation_required` where nobody can be asked (a legacy-era call, a client without elicitation)
 * and -32602 for a state that does not belong to this call.
 */
export function confirmation(
  signer: ConfirmationSigner,
  params: Params,
  modern: boolean,
  keyId: string,
  tool: string,
  args: Record<string, unknown>,
  nowMs: number,
): Confirmation {
  const cannotAsk = (why: string) =>
    new AppError(
      'confirmation_required',
      `The tool ${tool} needs the agent's user to confirm each call under this API key's grants (grant confirm), and ${why}: nothing was done`,
      { grant: 'confirm' },
    );
  if (!modern) throw cannotAsk('only MCP 2026-07-28 can ask them (elicitation in an input_required result)');
  const state = params.requestState;
  if (state !== undefined) {
    if (typeof state !== 'string' || !signer.verify(state, keyId, tool, args, nowMs)) {
      throw new RpcError(
        INVALID_PARAMS,
        'Invalid params: requestState does not belong to this call (another key, tool or arguments) or has expired; call the tool again without it',
        { field: 'requestState' },
      );
    }
    const responses = params.inputResponses;
    const answer =
      responses !== null && typeof responses === 'object' && !Array.isArray(responses)
        ? (responses as Record<string, unknown>)[FIELD]
        : undefined;
    const a = (answer ?? {}) as { action?: unknown; content?: Record<string, unknown> | null };
    if (a.action === 'accept' && a.content?.[FIELD] === true) return { kind: 'confirmed' };
    return { kind: 'declined', action: typeof a.action === 'string' ? a.action : 'no answer' };
  }
  const meta = params._meta as Record<string, unknown> | undefined;
  const caps = meta?.[CLIENT_CAPABILITIES_META] as Record<string, unknown> | undefined;
  const elicitation = caps?.elicitation;
  if (elicitation === null || typeof elicitation !== 'object' || Array.isArray(elicitation))
    throw cannotAsk('this client declares no elicitation capability to ask them with');
  const shown = JSON.stringify(args);
  const message =
    `An AI agent using the bot's API key wants to call ${tool} with ${shown.length > 1_000 ? `${shown.slice(0, 1_000)}…` : shown}. ` +
    'Allow this one call?';
  return {
    kind: 'ask',
    result: JSON.stringify({
      resultType: 'input_required',
      inputRequests: {
        [FIELD]: {
          method: 'elicitation/create',
          params: {
            message,
            requestedSchema: {
              type: 'object',
              properties: {
                [FIELD]: {
                  type: 'boolean',
                  title: `Allow ${tool}`,
                  description: 'Yes runs this call once, exactly as shown',
                },
              },
              required: [FIELD],
            },
          },
        },
      },
      requestState: signer.issue(keyId, tool, args, nowMs),
    }),
  };
}
