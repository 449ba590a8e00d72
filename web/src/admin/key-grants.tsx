import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, describe, ok } from '../api/client';
import type { ApiKey, Body, GrantTool, KeyGrants } from '../api/types';
import { GRANT_TOOLS } from './lists';

type Membership = Body<'/api/bots/{botId}/memberships', 'get'>['items'][number];
type PauseOn = NonNullable<KeyGrants['pause_on']>;

/** The guard rails' defaults (server/src/domain/grants.ts, PAUSE_DEFAULTS; docs/API.md "Guard rails"). */
const BUDGET_DEFAULT = { refusals: 5, window_minutes: 10 };
const BURST_DEFAULT = { targets: 5, window_minutes: 10 };

const KIND: Record<Membership['kind'], string> = {
  channel: '#',
  project: 'Project ',
  topic: 'Topic ',
  dm_room: '',
};

const toggled = <T,>(set: Set<T>, value: T, on: boolean): Set<T> => {
  const next = new Set(set);
  if (on) next.add(value);
  else next.delete(value);
  return next;
};

function ToolChecks(props: {
  legend: string;
  name: string;
  value: Set<GrantTool>;
  onChange(v: Set<GrantTool>): void;
}) {
  return (
    <fieldset>
      <legend>{props.legend}</legend>
      <div class="checks">
        {GRANT_TOOLS.map((t) => (
          <label key={t} class="check">
            <input
              type="checkbox"
              name={props.name}
              checked={props.value.has(t)}
              onChange={(e) => props.onChange(toggled(props.value, t, e.currentTarget.checked))}
            />
            {t}
          </label>
        ))}
      </div>
    </fieldset>
  );
}

/** One guard-rail rule: whether it is on, and its "count within minutes". */
function RuleFields(props: {
  label: string;
  on: boolean;
  onToggle(on: boolean): void;
  countLabel: string;
  countMin: number;
  count: string;
  onCount(v: string): void;
  minutes: string;
  onMinutes(v: string): void;
}) {
  return (
    <>
      <label class="check">
        <input type="checkbox" checked={props.on} onChange={(e) => props.onToggle(e.currentTarget.checked)} />
        {props.label}
      </label>
      {props.on && (
        <div class="checks">
          <label>
            {props.countLabel}
            <input
              type="number"
              min={props.countMin}
              max={1000}
              value={props.count}
              onInput={(e) => props.onCount(e.currentTarget.value)}
            />
          </label>
          <label>
            within minutes
            <input
              type="number"
              min={1}
              max={1440}
              value={props.minutes}
              onInput={(e) => props.onMinutes(e.currentTarget.value)}
            />
          </label>
        </div>
      )}
    </>
  );
}

/**
 * The grant fields of a key (docs/API.md "Agent grants"), for issuing one and for editing one: tools,
 * read-only, @all/@here, the containers (picked from the bot's memberships), the write budgets, the tools
 * that need approval or the agent's user's confirmation, and the guard rails. Nothing picked or typed
 * means no grant of that kind; `grants()` is null when no grant is set. `idSuffix` keeps the ids of two
 * forms on one page apart.
 */
export function useGrantsForm(
  botId: string,
  initial: ApiKey['grants'] | null,
  idSuffix: string,
): { fields: ComponentChildren; grants(): KeyGrants | null; error: string | null } {
  const g = initial ?? {};
  const [tools, setTools] = useState(new Set<GrantTool>((g.tools ?? []) as GrantTool[]));
  const [approval, setApproval] = useState(new Set<GrantTool>((g.approval ?? []) as GrantTool[]));
  const [confirm, setConfirm] = useState(new Set<GrantTool>((g.confirm ?? []) as GrantTool[]));
  const [readOnly, setReadOnly] = useState(g.read_only === true);
  const [mentionsAll, setMentionsAll] = useState(g.mentions_all !== false);
  const [containers, setContainers] = useState(new Set(g.containers ?? []));
  const [perHour, setPerHour] = useState(g.writes_per_hour?.toString() ?? '');
  const [perDay, setPerDay] = useState(g.writes_per_day?.toString() ?? '');
  const budget = g.pause_on?.budget;
  const burst = g.pause_on?.burst;
  const [budgetOn, setBudgetOn] = useState(budget !== false);
  const [refusals, setRefusals] = useState(String((budget || BUDGET_DEFAULT).refusals));
  const [budgetMinutes, setBudgetMinutes] = useState(String((budget || BUDGET_DEFAULT).window_minutes));
  const [burstOn, setBurstOn] = useState(burst !== false);
  const [targets, setTargets] = useState(String((burst || BURST_DEFAULT).targets));
  const [burstMinutes, setBurstMinutes] = useState(String((burst || BURST_DEFAULT).window_minutes));
  const [memberships, setMemberships] = useState<Membership[] | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    ok(api.GET('/api/bots/{botId}/memberships', { params: { path: { botId } } }))
      .then((r) => setMemberships(r.items))
      .catch((e: unknown) => setError(describe(e)));
  }, [botId]);

  function grants(): KeyGrants | null {
    const out: KeyGrants = {};
    if (tools.size > 0) out.tools = GRANT_TOOLS.filter((t) => tools.has(t));
    if (readOnly) out.read_only = true;
    if (containers.size > 0) out.containers = [...containers];
    if (perHour.trim() !== '') out.writes_per_hour = Number(perHour);
    if (perDay.trim() !== '') out.writes_per_day = Number(perDay);
    if (!mentionsAll) out.mentions_all = false;
    if (approval.size > 0) out.approval = GRANT_TOOLS.filter((t) => approval.has(t));
    if (confirm.size > 0) out.confirm = GRANT_TOOLS.filter((t) => confirm.has(t));
    if (g.approvers?.length) out.approvers = g.approvers; // kept as they are (set through the API)
    const pauseOn: PauseOn = {};
    if (!budgetOn) pauseOn.budget = false;
    else if (
      Number(refusals) !== BUDGET_DEFAULT.refusals ||
      Number(budgetMinutes) !== BUDGET_DEFAULT.window_minutes
    )
      pauseOn.budget = { refusals: Number(refusals), window_minutes: Number(budgetMinutes) };
    if (!burstOn) pauseOn.burst = false;
    else if (
      Number(targets) !== BURST_DEFAULT.targets ||
      Number(burstMinutes) !== BURST_DEFAULT.window_minutes
    )
      pauseOn.burst = { targets: Number(targets), window_minutes: Number(burstMinutes) };
    if (Object.keys(pauseOn).length > 0) out.pause_on = pauseOn;
    return Object.keys(out).length > 0 ? out : null;
  }

  // Containers the key names that the bot has since left stay listed (by id) so they can be removed.
  const known = new Set((memberships ?? []).map((m) => m.id));
  const gone = [...containers].filter((id) => memberships !== null && !known.has(id));

  const fields = (
    <>
      <ToolChecks
        legend="MCP tools the key may call (none picked: every tool)"
        name={`grant-tools-${idSuffix}`}
        value={tools}
        onChange={setTools}
      />
      <label class="check">
        <input type="checkbox" checked={readOnly} onChange={(e) => setReadOnly(e.currentTarget.checked)} />
        Read-only (every write is refused)
      </label>
      <label class="check">
        <input
          type="checkbox"
          checked={mentionsAll}
          onChange={(e) => setMentionsAll(e.currentTarget.checked)}
        />
        May mention @all and @here
      </label>
      <fieldset>
        <legend>Only in these (none picked: wherever the bot is)</legend>
        {memberships === null ? (
          <p class="muted">Loading the bot's channels, projects and DM rooms…</p>
        ) : memberships.length === 0 && gone.length === 0 ? (
          <p class="muted">The bot is not a member of any channel, project or DM room yet.</p>
        ) : (
          <div class="checks">
            {memberships.map((m) => (
              <label key={m.id} class="check">
                <input
                  type="checkbox"
                  checked={containers.has(m.id)}
                  onChange={(e) => setContainers(toggled(containers, m.id, e.currentTarget.checked))}
                />
                {KIND[m.kind]}
                {m.name}
              </label>
            ))}
            {gone.map((id) => (
              <label key={id} class="check">
                <input
                  type="checkbox"
                  checked
                  onChange={(e) => setContainers(toggled(containers, id, e.currentTarget.checked))}
                />
                {id} (the bot is no longer a member)
              </label>
            ))}
          </div>
        )}
      </fieldset>
      <label for={`per-hour-${idSuffix}`}>Writes per hour (empty: no budget)</label>
      <input
        id={`per-hour-${idSuffix}`}
        type="number"
        min={1}
        value={perHour}
        onInput={(e) => setPerHour(e.currentTarget.value)}
      />
      <label for={`per-day-${idSuffix}`}>Writes per day (empty: no budget)</label>
      <input
        id={`per-day-${idSuffix}`}
        type="number"
        min={1}
        value={perDay}
        onInput={(e) => setPerDay(e.currentTarget.value)}
      />
      <ToolChecks
        legend="Tools that need a human's approval"
        name={`grant-approval-${idSuffix}`}
        value={approval}
        onChange={setApproval}
      />
      <ToolChecks
        legend="Tools the agent's user must confirm (MCP clients that ask them)"
        name={`grant-confirm-${idSuffix}`}
        value={confirm}
        onChange={setConfirm}
      />
      <fieldset>
        <legend>Guard rails (pause the key until a manager resumes it)</legend>
        <RuleFields
          label="Pause when its writes keep meeting a spent budget"
          on={budgetOn}
          onToggle={setBudgetOn}
          countLabel="Refusals"
          countMin={1}
          count={refusals}
          onCount={setRefusals}
          minutes={budgetMinutes}
          onMinutes={setBudgetMinutes}
        />
        <RuleFields
          label="Pause when the same text goes to many places"
          on={burstOn}
          onToggle={setBurstOn}
          countLabel="Places"
          countMin={2}
          count={targets}
          onCount={setTargets}
          minutes={burstMinutes}
          onMinutes={setBurstMinutes}
        />
      </fieldset>
    </>
  );
  return { fields, grants, error };
}

/**
 * Edits the grants of one API key (PATCH /api/bots/{botId}/api-keys/{keyId}; docs/API.md "Agent
 * grants"), with the fields of `useGrantsForm`; no grant at all clears them. Audited server-side.
 */
export function KeyGrantsEditor(props: {
  botId: string;
  apiKey: ApiKey;
  onSaved(): Promise<void>;
  onCancel(): void;
}) {
  const form = useGrantsForm(props.botId, props.apiKey.grants, props.apiKey.id);
  const [error, setError] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  const prefix = props.apiKey.key_prefix;
  const shown = error ?? form.error;

  async function save(e: Event) {
    e.preventDefault();
    setError(null);
    setSaving(true);
    try {
      await ok(
        api.PATCH('/api/bots/{botId}/api-keys/{keyId}', {
          params: { path: { botId: props.botId, keyId: props.apiKey.id } },
          body: { grants: form.grants() },
        }),
      );
      await props.onSaved();
    } catch (err) {
      setError(describe(err));
    } finally {
      setSaving(false);
    }
  }

  return (
    <form class="card form" aria-label={`Grants of ${prefix}…`} onSubmit={(e) => void save(e)}>
      <h4>Grants of {prefix}…</h4>
      <p class="muted">
        Effective on the key's next request. Nothing picked or typed means no grant of that kind; with no
        grant at all the key reaches what its scopes allow, with no guard rails.
      </p>
      {shown !== null && (
        <p class="error" role="alert">
          {shown}
        </p>
      )}
      {form.fields}
      <div class="buttons">
        <button type="submit" class="primary" disabled={saving}>
          Save grants
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/**
 * A paused key (a guard rail or a manager paused it; docs/API.md "Guard rails"): when and why, and
 * Resume (PATCH the key `{ "paused": false }`, audited).
 */
export function PausedKey(props: { botId: string; apiKey: ApiKey; onResumed(): Promise<void> }) {
  const [error, setError] = useState<string | null>(null);
  const k = props.apiKey;
  if (k.paused_at === null) return null;
  return (
    <div class="notice" role="status" aria-label={`Key ${k.key_prefix}… is paused`}>
      <p>
        <strong>Key {k.key_prefix}… is paused</strong> since {new Date(k.paused_at).toLocaleString()}:{' '}
        {k.paused_reason}. Its calls are refused (key_paused) until it is resumed.
      </p>
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <button
        type="button"
        class="primary"
        onClick={() =>
          void ok(
            api.PATCH('/api/bots/{botId}/api-keys/{keyId}', {
              params: { path: { botId: props.botId, keyId: k.id } },
              body: { paused: false },
            }),
          )
            .then(props.onResumed)
            .catch((e: unknown) => setError(describe(e)))
        }
      >
        Resume {k.key_prefix}…
      </button>
    </div>
  );
}
