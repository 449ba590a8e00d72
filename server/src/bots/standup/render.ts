import { cut, cutBytes, jsonBytes, md, quoteBlock } from '../platform-kit/text.js';
import { formatClock, formatDate, formatDays, formatDuration, formatInstant } from '../platform-kit/time.js';

export { formatDate };
import { STANDUP_LIMITS, type Participant, type StandupConfig, type StandupRun } from './model.js';

/**
 * The stand-up bot's texts (pure, Markdown). Everything a member wrote is shown as they wrote it inside
 * a quote block (every line quoted, so an answer cannot break out of its place); names and channel
 * names are escaped.
 */

/** The DM that asks question `k` (0-based); the first one introduces the stand-up. */
export function askText(run: Pick<StandupRun, 'channel_name' | 'date' | 'questions'>, k: number): string {
  const n = run.questions.length;
  const q = `**${k + 1}/${n}** ${md(run.questions[k]!)}`;
  if (k > 0) return q;
  return [
    `👋 **Stand-up in #${md(run.channel_name)}** · ${formatDate(run.date)}`,
    `${n === 1 ? 'One question' : `${n} questions`} — reply here, one message per answer.`,
    '',
    q,
  ].join('\n');
}

/** After the last answer. */
export function thanksText(run: Pick<StandupRun, 'channel_name' | 'summary_at' | 'tz'>): string {
  return `✅ Thanks! Your answers are in for the stand-up in #${md(run.channel_name)}; the summary is posted there at ${formatClock(run.summary_at, run.tz)} (${run.tz}).`;
}

/** Told when another stand-up is being answered first. */
export function waitText(run: Pick<StandupRun, 'channel_name' | 'date'>): string {
  return `🕘 The stand-up in #${md(run.channel_name)} (${formatDate(run.date)}) has started too; its questions follow once you have answered the one in progress.`;
}

export function reminderText(run: Pick<StandupRun, 'channel_name' | 'summary_at' | 'tz'>): string {
  return `⏰ Reminder: the stand-up summary of #${md(run.channel_name)} is posted at ${formatClock(run.summary_at, run.tz)} (${run.tz}); reply here with your answers before then.`;
}

export function lateText(channelName: string): string {
  return `The stand-up in #${md(channelName)} has closed; this answer came too late and was not added.`;
}

export const IDLE_TEXT =
  'No stand-up is waiting for your answers. When a channel you are in holds one, its questions come here.';

export function cutText(max: number): string {
  return `(Your answer was longer than ${max} characters; the rest was cut.)`;
}

/**
 * The summary posted in the channel: who answered what, in the order the members were asked, then who
 * has not answered. Cut to STANDUP_LIMITS.summaryChars (answers shortened first, evenly).
 */
export function summaryText(
  run: Pick<StandupRun, 'channel_name' | 'date' | 'questions' | 'participants' | 'left_out'>,
  answers: ReadonlyMap<string, Participant>,
  names: ReadonlyMap<string, string>,
  maxChars: number = STANDUP_LIMITS.summaryChars,
): string {
  const name = (id: string) => `**${md(names.get(id) ?? 'a former member')}**`;
  const answered = run.participants.filter((u) => (answers.get(u)?.answers.length ?? 0) > 0);
  const missing = run.participants.filter((u) => (answers.get(u)?.answers.length ?? 0) === 0);
  const head = [
    `📋 **Stand-up · #${md(run.channel_name)} · ${formatDate(run.date)}**`,
    `${answered.length} of ${run.participants.length} answered` +
      (missing.length > 0 ? ` · not answered: ${missing.map(name).join(', ')}` : ' · everyone answered 🎉'),
  ];
  if (run.left_out > 0)
    head.push(
      `_${run.left_out} more members were not asked (a stand-up asks at most ${STANDUP_LIMITS.participants})._`,
    );
  const render = (cap: number) => {
    const blocks: string[] = [];
    for (const u of answered) {
      const p = answers.get(u)!;
      const lines = [name(u)];
      run.questions.forEach((q, i) => {
        const a = p.answers[i];
        lines.push(`> **${md(q)}**`);
        if (a === undefined) lines.push('> _(no answer)_');
        else lines.push(quoteBlock(cut(a.text, cap)));
      });
      blocks.push(lines.join('\n'));
    }
    return [head.join('\n'), ...blocks].join('\n\n');
  };
  const tooLong = (t: string) => t.length > maxChars || jsonBytes(t) > STANDUP_LIMITS.summaryBytes;
  let cap: number = STANDUP_LIMITS.answerChars;
  let text = render(cap);
  while (tooLong(text) && cap > 20) {
    cap = Math.floor(cap / 2);
    text = render(cap);
  }
  if (!tooLong(text)) return text;
  const note = '\n\n_(summary cut: too long)_';
  return `${cutBytes(cut(text, maxChars - note.length), STANDUP_LIMITS.summaryBytes - 100)}${note}`;
}

/** `/standup show`. */
export function showText(c: StandupConfig | null, next: string | null, lastRun: StandupRun | null): string {
  if (!c) return 'No stand-up is set up in this channel. ' + '`/standup help` says how.';
  const lines = [
    `**Stand-up of this channel**${c.paused ? ' — ⏸ paused' : ''}`,
    `- When: ${c.time} ${formatDays(c.days)} (${c.tz}); summary ${formatDuration(c.window_ms)} later` +
      (c.remind_ms > 0 ? `, reminder ${formatDuration(c.remind_ms)} before it` : ', no reminder'),
    `- Questions: ${c.questions.map((q, i) => `${i + 1}. ${md(q)}`).join(' · ')}`,
  ];
  if (c.skip.length > 0) lines.push(`- Skipped: ${c.skip.join(', ')}`);
  if (c.paused) lines.push('- Next: none while paused (`/standup resume`)');
  else if (next) lines.push(`- Next: ${next}`);
  if (lastRun) {
    const what =
      lastRun.state === 'posted'
        ? 'summary posted'
        : `open until ${formatInstant(lastRun.summary_at, lastRun.tz)}`;
    lines.push(`- Last: ${formatDate(lastRun.date)}, ${lastRun.participants.length} members asked, ${what}`);
  }
  return lines.join('\n');
}
