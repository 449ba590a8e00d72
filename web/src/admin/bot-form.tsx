import { useState } from 'preact/hooks';
import { describe } from '../api/client';
import type { Bot, BotInput, EventType } from '../api/types';
import { EVENT_TYPES } from './lists';

/** Register or edit a bot: name, type, description, webhook URL and the events it subscribes to. */
export function BotForm(props: {
  title: string;
  bot?: Bot;
  allowPlatform: boolean;
  onSave(input: BotInput): Promise<void>;
  onCancel(): void;
}) {
  const b = props.bot;
  const [name, setName] = useState(b?.name ?? '');
  const [type, setType] = useState<'custom' | 'platform'>(b?.type === 'platform' ? 'platform' : 'custom');
  const [description, setDescription] = useState(b?.description ?? '');
  const [webhook, setWebhook] = useState(b?.webhook_url ?? '');
  const [events, setEvents] = useState<Set<EventType>>(new Set((b?.events ?? []) as EventType[]));
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const id = b?.id ?? 'new';

  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const input: BotInput = { name, description, events: EVENT_TYPES.filter((t) => events.has(t)) };
    if (webhook.trim() !== '') input.webhook_url = webhook.trim();
    if (b === undefined && type === 'platform') input.type = 'platform';
    try {
      await props.onSave(input);
    } catch (err) {
      setError(describe(err));
      setBusy(false);
    }
  }

  return (
    <form class="card form" onSubmit={(e) => void submit(e)} aria-labelledby={`bot-form-${id}`}>
      <h3 id={`bot-form-${id}`}>{props.title}</h3>
      <label for={`bot-name-${id}`}>Name</label>
      <input
        id={`bot-name-${id}`}
        required
        maxLength={200}
        value={name}
        onInput={(e) => setName(e.currentTarget.value)}
      />
      {b === undefined && props.allowPlatform && (
        <>
          <label for={`bot-type-${id}`}>Type</label>
          <select
            id={`bot-type-${id}`}
            value={type}
            onChange={(e) => setType(e.currentTarget.value as 'custom' | 'platform')}
          >
            <option value="custom">Custom (this organization)</option>
            <option value="platform">Platform (every organization)</option>
          </select>
        </>
      )}
      <label for={`bot-desc-${id}`}>Description</label>
      <textarea
        id={`bot-desc-${id}`}
        maxLength={2000}
        value={description}
        onInput={(e) => setDescription(e.currentTarget.value)}
      />
      <label for={`bot-url-${id}`}>Webhook URL</label>
      <input
        id={`bot-url-${id}`}
        type="url"
        placeholder="https://example.com/workroom/webhook"
        value={webhook}
        onInput={(e) => setWebhook(e.currentTarget.value)}
      />
      <fieldset>
        <legend>Subscribed events</legend>
        <div class="checks">
          {EVENT_TYPES.map((t) => (
            <label key={t} class="check">
              <input
                type="checkbox"
                checked={events.has(t)}
                onChange={(e) => {
                  const next = new Set(events);
                  if (e.currentTarget.checked) next.add(t);
                  else next.delete(t);
                  setEvents(next);
                }}
              />
              {t}
            </label>
          ))}
        </div>
      </fieldset>
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <div class="buttons">
        <button type="submit" class="primary" disabled={busy}>
          {b === undefined ? 'Register' : 'Save changes'}
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
