import './features.css';

export type RoomView = 'messages' | 'board' | 'bookmarks' | 'files';

const LABEL: Record<RoomView, string> = {
  messages: 'Messages',
  board: 'Task board',
  bookmarks: 'Bookmarks',
  files: 'Files',
};

/** The views of a room: topics have a task board, channels their bookmarks and files. */
export const viewsOf = (kind: 'channel' | 'topic' | 'dm'): RoomView[] =>
  kind === 'topic' ? ['messages', 'board'] : kind === 'channel' ? ['messages', 'bookmarks', 'files'] : [];

/** A tab list (arrow keys, Home and End move between tabs; the selected one is the tab stop). */
export function RoomTabs(props: { views: RoomView[]; view: RoomView; setView(v: RoomView): void }) {
  const { views, view } = props;
  const go = (e: KeyboardEvent, next: RoomView | undefined) => {
    if (next === undefined) return;
    e.preventDefault();
    props.setView(next);
    (
      (e.currentTarget as HTMLElement).parentElement?.querySelector(`#tab-${next}`) as HTMLElement | null
    )?.focus();
  };
  return (
    <div role="tablist" aria-label="Room views" class="tabs">
      {views.map((v, i) => (
        <button
          key={v}
          type="button"
          role="tab"
          id={`tab-${v}`}
          aria-selected={view === v}
          aria-controls="room-panel"
          tabIndex={view === v ? 0 : -1}
          onClick={() => props.setView(v)}
          onKeyDown={(e) => {
            const n = views.length;
            if (e.key === 'ArrowRight') go(e, views[(i + 1) % n]);
            else if (e.key === 'ArrowLeft') go(e, views[(i + n - 1) % n]);
            else if (e.key === 'Home') go(e, views[0]);
            else if (e.key === 'End') go(e, views[n - 1]);
          }}
        >
          {LABEL[v]}
        </button>
      ))}
    </div>
  );
}
