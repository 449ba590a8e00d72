import { useEffect, useState } from 'preact/hooks';
import { describe } from '../api/client';
import type { Message } from '../api/types';

type Action = NonNullable<Message['actions']>[number];

export interface ActionsProps {
  m: Message;
  /** The bot's name, for the group's label. */
  botName: string;
  /** Clicks a button (no value) or chooses an option of a select. */
  invoke(m: Message, actionId: string, value?: string): Promise<void>;
}

/**
 * The buttons and selects of a bot message (docs/ACTIONS.md): real <button> and <select> elements, so
 * they work with a keyboard and a screen reader. A click calls POST /api/messages/{id}/actions; the
 * control is busy until the answer, and a failure shows under the actions. What the bot does with the
 * click arrives as an edit of the message (message.updated), which replaces these actions live.
 */
export function MessageActions({ m, botName, invoke }: ActionsProps) {
  const [pending, setPending] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [chosen, setChosen] = useState<Record<string, string>>({});
  // A new version of the message (the bot's edit) starts afresh.
  const version = `${m.id}:${m.edited_at ?? ''}`;
  useEffect(() => {
    setChosen({});
    setError(null);
  }, [version]);

  const actions = m.actions ?? [];
  if (actions.length === 0) return null;

  async function run(a: Action, value?: string) {
    setPending(a.id);
    setError(null);
    try {
      await invoke(m, a.id, value);
    } catch (e) {
      setError(describe(e));
      if (a.type === 'select') setChosen((c) => ({ ...c, [a.id]: '' }));
    } finally {
      setPending(null);
    }
  }

  const errorId = `actions-error-${m.id}`;
  return (
    <div class="msg-actions">
      <div role="group" aria-label={`Actions from ${botName}`} class="msg-actions-row">
        {actions.map((a) =>
          a.type === 'button' ? (
            <button
              key={a.id}
              type="button"
              class={`msg-action${a.style === 'default' ? '' : ` ${a.style}`}`}
              disabled={pending !== null}
              aria-busy={pending === a.id}
              aria-describedby={error !== null ? errorId : undefined}
              onClick={() => void run(a)}
            >
              {a.label}
              {pending === a.id && <span aria-hidden="true"> …</span>}
            </button>
          ) : (
            <select
              key={a.id}
              class="msg-action"
              aria-label={a.placeholder ?? 'Choose an option'}
              aria-busy={pending === a.id}
              aria-describedby={error !== null ? errorId : undefined}
              disabled={pending !== null}
              value={chosen[a.id] ?? ''}
              onChange={(e) => {
                const value = e.currentTarget.value;
                if (value === '') return;
                setChosen((c) => ({ ...c, [a.id]: value }));
                void run(a, value);
              }}
            >
              <option value="" disabled>
                {a.placeholder ?? 'Choose…'}
              </option>
              {a.options.map((o) => (
                <option key={o.value} value={o.value}>
                  {o.label}
                </option>
              ))}
            </select>
          ),
        )}
        <span class="muted" role="status">
          {pending !== null ? 'Sending…' : ''}
        </span>
      </div>
      {error !== null && (
        <p class="error" role="alert" id={errorId}>
          {error}
        </p>
      )}
    </div>
  );
}
