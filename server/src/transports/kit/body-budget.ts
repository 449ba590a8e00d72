import { AppError } from '../../domain/errors.js';

/**
 * Memory held for strangers: the bytes of request bodies that are read before the caller is known
 * (sign-in, a signed incoming webhook, a command response URL) are counted while they are buffered,
 * in all and per client address. A body that would go past either bound is refused at once, before
 * its bytes are read: per address 429 (that client is the one holding the memory), in all 503. So N
 * stalled connections each sending a large body cost at most the bound, not N × the body limit (an
 * outside attack held 2 GB with 2,000 such connections before).
 *
 * Callers that authenticate before they read (every operation route, MCP, uploads) do not take part:
 * their bodies are bounded by the caller's own rate limit and WORKROOM_MAX_BODY_BYTES.
 *
 * The counts live in this process; each instance bounds its own memory, which is what they protect.
 */
export class UnauthenticatedBodies {
  #total = 0;
  readonly #byAddress = new Map<string, number>();

  /** `refused`: hears each body refused for going past a bound (metrics). */
  constructor(
    readonly limits: { totalBytes: number; perAddressBytes: number },
    private readonly refused: () => void = () => {},
  ) {}

  /** Bytes held now, in all (tests and metrics). */
  get heldBytes(): number {
    return this.#total;
  }

  /** A reservation for one request's body from `address`; release it when the request is done. */
  reserve(address: string): BodyReservation {
    let held = 0;
    let released = false;
    const give = (n: number) => {
      this.#total -= n;
      const left = (this.#byAddress.get(address) ?? 0) - n;
      if (left <= 0) this.#byAddress.delete(address);
      else this.#byAddress.set(address, left);
    };
    return {
      take: (n) => {
        if (released) return null;
        const mine = this.#byAddress.get(address) ?? 0;
        if (mine + n > this.limits.perAddressBytes) {
          this.refused();
          return new AppError(
            'rate_limited',
            'Too many unauthenticated request bodies from this address at once; retry in a moment',
            { retryAfterSeconds: 1 },
          );
        }
        if (this.#total + n > this.limits.totalBytes) {
          this.refused();
          return new AppError(
            'unavailable',
            'The server is busy reading other request bodies; retry in a moment',
            {
              retryAfterSeconds: 1,
            },
          );
        }
        this.#total += n;
        this.#byAddress.set(address, mine + n);
        held += n;
        return null;
      },
      release: () => {
        if (released) return;
        released = true;
        give(held);
        held = 0;
      },
    };
  }
}

/** Bytes one request may buffer before its caller is known. */
export interface BodyReservation {
  /** Counts `n` more bytes; the error to answer when that would go past a bound (nothing is taken then). */
  take(n: number): AppError | null;
  /** Gives every byte back (idempotent): the body was parsed, refused, or the request ended. */
  release(): void;
}
