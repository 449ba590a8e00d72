import { cut, cutBytes, jsonBytes, md, oneLine, quoteBlock } from '../platform-kit/text.js';
import { formatInstant } from '../platform-kit/time.js';
import { COLLECT_LIMITS, refOf, type Collection, type FileRef, type Reply } from './model.js';

/** The collection bot's texts (pure, Markdown; members' text quoted line by line, names escaped). */

type Head = Pick<Collection, 'prompt' | 'channel_name' | 'requester_name' | 'due_at' | 'tz'>;

const due = (c: Head) => formatInstant(c.due_at, c.tz);

export function sizeText(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

const fileLine = (f: FileRef) => `📎 [${md(f.filename)}](/api/files/${f.id}) (${sizeText(f.size)})`;

/** The request every member gets by DM. */
export function requestText(c: Head): string {
  return [
    `📥 **${md(c.requester_name)} asks, in #${md(c.channel_name)}:**`,
    quoteBlock(c.prompt),
    `Due ${due(c)}. Reply here — text, and links to files you uploaded in #${md(c.channel_name)} (\`/api/files/<id>\`). Several messages are added together.`,
  ].join('\n');
}

export function reminderText(c: Head): string {
  return `⏰ Reminder: ${md(c.requester_name)}’s request in #${md(c.channel_name)} — “${md(oneLine(c.prompt, 120))}” — is due ${due(c)}. Reply here to send yours.`;
}

/** The acknowledgement of a reply; names where the next message goes when another request waits. */
export function ackText(c: Head, files: number, next: Head | null): string {
  const what = files > 0 ? `your reply (${files} file${files === 1 ? '' : 's'})` : 'your reply';
  const lines = [
    `✅ Recorded ${what} for “${md(oneLine(c.prompt, 120))}” (#${md(c.channel_name)}, due ${due(c)}).`,
  ];
  if (next)
    lines.push(
      `Your next message answers the next request: “${md(oneLine(next.prompt, 120))}” (#${md(next.channel_name)}).`,
    );
  else lines.push('Send more messages to add to it until the deadline.');
  return lines.join('\n');
}

export const IDLE_TEXT = 'No request of the collection bot is waiting for your reply.';
export const FULL_TEXT = `Your reply is full (at most ${COLLECT_LIMITS.replyChars} characters and ${COLLECT_LIMITS.filesPerReply} files); this message was not added.`;

export function fileProblemText(problems: string[]): string {
  return `⚠️ Not added: ${problems.join('; ')}. Files must be uploaded in the request's channel first, then linked here.`;
}

export function lateText(c: Pick<Collection, 'prompt'>): string {
  return `The request “${md(oneLine(c.prompt, 120))}” has closed; this message came too late and was not added.`;
}

/**
 * The result, in messages of at most COLLECT_LIMITS.resultChars (and resultBytes): a head with who
 * replied and who did not, then every reply in the order the members were asked.
 */
export function resultChunks(
  c: Head & Pick<Collection, 'recipients' | 'left_out'>,
  replies: ReadonlyMap<string, Reply>,
  names: ReadonlyMap<string, string>,
): string[] {
  const name = (id: string) => `**${md(names.get(id) ?? 'a former member')}**`;
  const replied = c.recipients.filter((u) => (replies.get(u)?.parts.length ?? 0) > 0);
  const missing = c.recipients.filter((u) => (replies.get(u)?.parts.length ?? 0) === 0);
  const head = [
    `📥 **Collection: ${md(oneLine(c.prompt, 200))}**`,
    `#${md(c.channel_name)} · asked by ${md(c.requester_name)} · due ${due(c)}`,
    `${replied.length} of ${c.recipients.length} replied` +
      (missing.length > 0 ? ` · no reply: ${missing.map(name).join(', ')}` : ' · everyone replied 🎉'),
  ];
  if (c.left_out > 0)
    head.push(`_${c.left_out} more members were not asked (at most ${COLLECT_LIMITS.recipients})._`);
  const blocks = replied.map((u) => {
    const parts = replies.get(u)!.parts;
    const lines = [name(u)];
    for (const p of parts) {
      if (p.text.trim() !== '') lines.push(quoteBlock(p.text));
      for (const f of p.files) lines.push(`> ${fileLine(f)}`);
    }
    return lines.join('\n');
  });
  const fits = (t: string) =>
    t.length <= COLLECT_LIMITS.resultChars && jsonBytes(t) <= COLLECT_LIMITS.resultBytes;
  const chunks: string[] = [];
  let cur = head.join('\n');
  for (const b of blocks) {
    const block = fits(b)
      ? b
      : cutBytes(cut(b, COLLECT_LIMITS.resultChars - 200), COLLECT_LIMITS.resultBytes - 400);
    const joined = `${cur}\n\n${block}`;
    if (fits(joined)) cur = joined;
    else {
      chunks.push(cur);
      cur = `📥 _(continued)_\n\n${block}`;
    }
  }
  chunks.push(cur);
  return chunks;
}

/** The note in the channel when the result went to the requester only. */
export function closedNote(c: Head, replied: number, total: number): string {
  return `📥 The collection “${md(oneLine(c.prompt, 120))}” has closed: ${replied} of ${total} replied. The result went to ${md(c.requester_name)} by DM.`;
}

export function createdText(
  c: Head & Pick<Collection, 'id' | 'recipients' | 'remind_at' | 'share' | 'left_out'>,
): string {
  const lines = [
    `📥 **${md(c.requester_name)}** is collecting: “${md(oneLine(c.prompt, 200))}”`,
    `Every member of this channel (${c.recipients.length}) gets the request by DM; due ${due(c)}` +
      (c.remind_at ? `, reminder ${formatInstant(c.remind_at, c.tz)}` : '') +
      '.',
    `The result goes to ${md(c.requester_name)} by DM${c.share === 'channel' ? ' and is posted here' : ''}. Ref \`${refOf(c.id)}\`.`,
  ];
  if (c.left_out > 0)
    lines.push(`_${c.left_out} members beyond the first ${COLLECT_LIMITS.recipients} are not asked._`);
  return lines.join('\n');
}

export function listText(items: Collection[]): string {
  if (items.length === 0) return 'No collections in this channel.';
  return [
    '**Collections of this channel**',
    ...items.map((c) => {
      const state =
        c.state === 'open'
          ? `open, ${c.recipients.length} asked, due ${due(c)}`
          : c.state === 'cancelled'
            ? 'cancelled'
            : 'closed';
      return `- \`${refOf(c.id)}\` “${md(oneLine(c.prompt, 100))}” by ${md(c.requester_name)} — ${state}`;
    }),
  ].join('\n');
}
