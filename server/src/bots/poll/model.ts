/**
 * The poll's vote model (pure; docs/bots/POLL.md).
 *
 * Each voter has their own bot data document, `poll/<poll id>/v/<user id>`, written with a
 * compare-and-set on its version. So votes of different users never touch the same document (100
 * concurrent voters cannot lose or double count one another, whatever order or concurrency the
 * handlers run in), and the count is the number of documents with a selection: a user is one
 * document, so a user counts once however often they click.
 *
 * A click is applied to the user's document as a last-writer-wins register stamped with the click's
 * time and invocation id (`invoked_at`, `invocation_id` of action.invoked):
 * - single choice: one register, the chosen option (or none after "retract");
 * - multiple choice: one register per option, on or off ("retract" turns every option off).
 * A click older than what a register holds changes nothing, so a delivery retried late, or two
 * clicks handled out of order, end where the clicks' own order says; the same click applied twice
 * (a redelivery) changes nothing; a double click on an option leaves it chosen (clicking an option
 * never takes it away: "Retract my vote" does).
 */

/** Orders clicks: by time, then by invocation id (ties within one millisecond). */
export interface Stamp {
  at: string;
  inv: string;
}

export const newer = (a: Stamp, b: Stamp | undefined): boolean =>
  b === undefined || a.at > b.at || (a.at === b.at && a.inv > b.inv);

/** A voter's document. `name` is shown beside their vote unless the poll is anonymous. */
export interface VoteDoc {
  name: string;
  /** single choice: the chosen option index, or null (retracted). */
  one?: { option: number | null } & Stamp;
  /** multiple choice: per option index (as a string key), whether it is chosen. */
  many?: Record<string, { on: boolean } & Stamp>;
}

export type Click = Stamp & { name: string } & ({ kind: 'vote'; option: number } | { kind: 'retract' });

/** The options a voter has chosen (sorted), whatever the poll's mode. */
export function selection(doc: VoteDoc | null | undefined): number[] {
  if (!doc) return [];
  if (doc.one) return doc.one.option === null ? [] : [doc.one.option];
  if (doc.many) {
    return Object.entries(doc.many)
      .filter(([, r]) => r.on)
      .map(([k]) => Number(k))
      .sort((a, b) => a - b);
  }
  return [];
}

/**
 * The document after `click`, or null when the click changes nothing that is stored (already applied,
 * or older than what the document holds). `optionCount` bounds option indexes (the caller checks them
 * before; an index out of range changes nothing).
 */
export function applyClick(
  doc: VoteDoc | null,
  click: Click,
  mode: { multiple: boolean; optionCount: number },
): VoteDoc | null {
  const stamp: Stamp = { at: click.at, inv: click.inv };
  if (
    click.kind === 'vote' &&
    (!Number.isInteger(click.option) || click.option < 0 || click.option >= mode.optionCount)
  ) {
    return null;
  }
  if (!mode.multiple) {
    const cur = doc?.one;
    if (cur && !newer(stamp, cur)) return null;
    // A retract is stored even when there is nothing to retract: a vote clicked before it, whose
    // delivery comes after, must find it and change nothing.
    const option = click.kind === 'vote' ? click.option : null;
    return { name: click.name, one: { option, ...stamp } };
  }
  const many = { ...(doc?.many ?? {}) };
  let changed = false;
  const set = (i: number, on: boolean) => {
    const cur = many[String(i)];
    if (cur && !newer(stamp, cur)) return;
    many[String(i)] = { on, ...stamp };
    changed = true;
  };
  if (click.kind === 'vote') set(click.option, true);
  // Every option's register, chosen or not: an older vote for any option delivered after it loses.
  else for (let i = 0; i < mode.optionCount; i++) set(i, false);
  if (!changed) return null;
  return { name: click.name, many };
}

/** Whether applying a click changed what the voter has chosen (a re-render is needed only then). */
export function selectionChanged(before: VoteDoc | null, after: VoteDoc): boolean {
  const a = selection(before);
  const b = selection(after);
  return a.length !== b.length || a.some((x, i) => x !== b[i]);
}

export interface Voter {
  userId: string;
  name: string;
  options: number[];
}

export interface Tally {
  /** Per option: how many voters chose it. */
  counts: number[];
  /** Per option: who chose it (names, in the order voters are given), for non-anonymous polls. */
  voters: string[][];
  /** Distinct users with at least one option chosen. */
  voterCount: number;
  /** Options chosen in all (= voterCount for a single-choice poll). */
  voteCount: number;
}

/** Counts the voters' documents (each user once; empty selections do not count). */
export function tally(optionCount: number, voters: readonly Voter[]): Tally {
  const counts = new Array<number>(optionCount).fill(0);
  const names = Array.from({ length: optionCount }, () => [] as string[]);
  let voterCount = 0;
  let voteCount = 0;
  const seen = new Set<string>();
  for (const v of voters) {
    if (seen.has(v.userId)) continue; // one document per user; guard anyway
    seen.add(v.userId);
    const opts = [...new Set(v.options)].filter((o) => Number.isInteger(o) && o >= 0 && o < optionCount);
    if (opts.length === 0) continue;
    voterCount++;
    for (const o of opts) {
      counts[o]!++;
      names[o]!.push(v.name);
      voteCount++;
    }
  }
  return { counts, voters: names, voterCount, voteCount };
}

// --- keys ---------------------------------------------------------------------------------------

export const pollKey = (pollId: string): string => `poll/${pollId}`;
export const votePrefix = (pollId: string): string => `poll/${pollId}/v/`;
export const voteKey = (pollId: string, userId: string): string => `${votePrefix(pollId)}${userId}`;

/** The user id at the end of a vote key (null for a key that is not one). */
export function voterOf(pollId: string, key: string): string | null {
  const p = votePrefix(pollId);
  return key.startsWith(p) && key.length > p.length ? key.slice(p.length) : null;
}
