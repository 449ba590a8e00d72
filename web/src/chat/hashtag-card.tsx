import { useEffect, useRef, useState } from 'preact/hooks';
import { api, describe, ok } from '../api/client';
import type { Body } from '../api/types';
import type { HashtagTarget } from '../markdown';
import type { Directory, RoomRef } from './directory';

type Preview = Body<'/api/hashtags/preview/{type}/{id}', 'get'>;

interface Open {
  target: HashtagTarget;
  anchor: HTMLElement;
}

const STATUS: Record<string, string> = {
  todo: 'To do',
  in_progress: 'In progress',
  review: 'Review',
  done: 'Done',
};

/** The facts of a preview card worth showing, by type (the server's `details`). */
function facts(p: Preview): [string, string][] {
  const d = p.details as Record<string, unknown>;
  const n = (k: string) => (typeof d[k] === 'number' ? String(d[k]) : null);
  const s = (k: string) => (typeof d[k] === 'string' ? (d[k] as string) : null);
  const out: [string, string | null][] =
    p.type === 'channel'
      ? [
          ['Visibility', d.is_private === true ? 'Private' : 'Public'],
          ['Members', n('member_count')],
          ['Messages', n('message_count')],
        ]
      : p.type === 'project'
        ? [
            ['Members', n('member_count')],
            ['Topics', n('topic_count')],
            ['Open tasks', n('open_task_count') && `${n('open_task_count')} of ${n('task_count') ?? '?'}`],
          ]
        : [
            ['Status', STATUS[s('status') ?? ''] ?? s('status')],
            ['Priority', s('priority')],
            ['Assignee', s('assignee_name') ?? 'Nobody'],
            ['Due', s('due_date')],
            ['Where', [s('project_name'), s('topic_name')].filter(Boolean).join(' › ') || null],
          ];
  return out.filter((f): f is [string, string] => f[1] !== null && f[1] !== '');
}

/**
 * Preview cards of hashtags: a click (or Enter) on a hashtag link in a message opens a card with what
 * GET /api/hashtags/preview/{type}/{id} tells about the channel, project or task, and a button to go
 * there. The card is a non-modal dialog: focus moves into it, Escape or a click elsewhere closes it
 * and focus returns to the link. What the person cannot see answers 404 and says so.
 */
export function HashtagCards(props: { dir: Directory | null; open(r: RoomRef, board?: boolean): void }) {
  const [card, setCard] = useState<Open | null>(null);
  const [preview, setPreview] = useState<Preview | null>(null);
  const [error, setError] = useState<string | null>(null);
  const box = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const onClick = (e: MouseEvent) => {
      const a = (e.target as Element | null)?.closest?.('a[data-hashtag]') as HTMLAnchorElement | null;
      if (a) {
        const [type, id] = (a.dataset.hashtag ?? '').split(':');
        if ((type === 'channel' || type === 'project' || type === 'task') && id) {
          e.preventDefault();
          setCard({ target: { type, id }, anchor: a });
        }
      } else if (box.current && !box.current.contains(e.target as Node)) setCard(null);
    };
    document.addEventListener('click', onClick);
    return () => document.removeEventListener('click', onClick);
  }, []);

  useEffect(() => {
    setPreview(null);
    setError(null);
    if (card === null) return;
    ok(
      api.GET('/api/hashtags/preview/{type}/{id}', {
        params: { path: { type: card.target.type, id: card.target.id } },
      }),
    )
      .then(setPreview)
      .catch((e: unknown) => setError(describe(e)));
    requestAnimationFrame(() => box.current?.focus());
  }, [card]);

  if (card === null) return null;
  const close = () => {
    card.anchor.focus();
    setCard(null);
  };
  const go = () => {
    const t = card.target;
    if (t.type === 'channel') props.open({ kind: 'channel', id: t.id });
    else if (t.type === 'task') {
      const topic = (preview?.details as Record<string, unknown> | undefined)?.topic_id;
      if (typeof topic === 'string') props.open({ kind: 'topic', id: topic }, true);
    } else {
      const topic = props.dir?.projects.find((p) => p.id === t.id)?.topics[0];
      if (topic) props.open({ kind: 'topic', id: topic.id });
    }
    setCard(null);
  };
  const canGo =
    preview !== null &&
    (card.target.type !== 'project' ||
      (props.dir?.projects.find((p) => p.id === card.target.id)?.topics.length ?? 0) > 0);

  // Below the link, or above it when the link is low on the screen; always inside the window.
  const r = card.anchor.getBoundingClientRect();
  const left = Math.max(8, Math.min(r.left, innerWidth - Math.min(340, innerWidth - 16) - 8));
  const style =
    r.bottom > innerHeight * 0.6
      ? { left: `${left}px`, bottom: `${innerHeight - r.top + 6}px` }
      : { left: `${left}px`, top: `${r.bottom + 6}px` };
  const label = preview?.title ?? card.anchor.textContent ?? 'Hashtag';

  return (
    <div
      ref={box}
      class="hashtag-card"
      role="dialog"
      aria-labelledby="hashtag-card-title"
      tabIndex={-1}
      style={style}
      onKeyDown={(e) => {
        if (e.key === 'Escape') {
          e.preventDefault();
          close();
        }
      }}
    >
      <h2 id="hashtag-card-title">
        <span class="kind">{card.target.type}</span> {label}
      </h2>
      {error !== null ? (
        <p class="error" role="alert">
          {error}
        </p>
      ) : preview === null ? (
        <p class="muted">Loading…</p>
      ) : (
        <>
          {preview.description && <p class="description">{preview.description}</p>}
          <dl>
            {facts(preview).map(([k, v]) => (
              <div key={k}>
                <dt>{k}</dt>
                <dd>{v}</dd>
              </div>
            ))}
          </dl>
        </>
      )}
      <div class="buttons">
        {canGo && (
          <button type="button" class="primary" onClick={go}>
            {card.target.type === 'channel'
              ? 'Open channel'
              : card.target.type === 'task'
                ? 'Open task board'
                : 'Open project'}
          </button>
        )}
        <button type="button" onClick={close}>
          Close
        </button>
      </div>
    </div>
  );
}
