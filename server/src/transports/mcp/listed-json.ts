/**
 * The JSON of read_messages' `structuredContent` (2025-06-18 and later, modern requests included),
 * with each listed message's JSON kept and used again while the message is unchanged.
 *
 * A structured read serializes its 20 messages a second time beside the text a model reads:
 * `JSON.stringify` of 20 listed messages took 13–15 µs here, a seventh of a modern read's CPU and the
 * difference between a legacy and a modern read (bench/notes/mcp-profile.md, 2026-12-02). An agent
 * reads the same recent messages again and again; comparing a listed message with the one whose JSON
 * was kept costs less than serializing it (20 messages: ~4.8 µs against ~13 µs).
 *
 * The answer is always exactly `JSON.stringify(result)`: a kept JSON is used only for a value equal to
 * the one it was made from, key by key in the same order, nested arrays and plain objects compared the
 * same way, anything else compared by identity. Edits, deletions and reactions change the value, so a
 * changed message is serialized again; nothing here can be stale. Bounded: emptied when full.
 */
const MAX_KEPT = 2000;

interface Kept {
  value: Record<string, unknown>;
  /** `Object.keys(value)`, taken once. */
  keys: string[];
  json: string;
}

export class ListedMessageJson {
  readonly #byId = new Map<string, Kept>();

  /** `JSON.stringify(result)` for a list result (`{ items: [...] }`); anything else is serialized whole. */
  list(result: unknown): string {
    if (!isPlainObject(result)) return JSON.stringify(result);
    const keys = Object.keys(result);
    const items = result.items;
    if (keys.length !== 1 || keys[0] !== 'items' || !Array.isArray(items)) return JSON.stringify(result);
    let json = '{"items":[';
    for (let i = 0; i < items.length; i++) {
      const item: unknown = items[i];
      if (i > 0) json += ',';
      json +=
        isPlainObject(item) && typeof item.id === 'string' ? this.#item(item.id, item) : JSON.stringify(item);
    }
    return json + ']}';
  }

  #item(id: string, item: Record<string, unknown>): string {
    const kept = this.#byId.get(id);
    if (kept !== undefined && sameEntries(kept, item)) return kept.json;
    const json = JSON.stringify(item);
    if (this.#byId.size >= MAX_KEPT) this.#byId.clear();
    this.#byId.set(id, { value: item, keys: Object.keys(item), json });
    return json;
  }
}

/** `sameJsonValue(kept.value, item)` for a plain object, with the kept value's keys taken once. */
function sameEntries(kept: Kept, item: Record<string, unknown>): boolean {
  const keys = Object.keys(item);
  if (keys.length !== kept.keys.length) return false;
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    if (k !== kept.keys[i]) return false;
    const a = kept.value[k];
    const b = item[k];
    if (a !== b && !sameJsonValue(a, b)) return false;
  }
  return true;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** Equal for JSON.stringify: same keys in the same order, equal values (see the class comment). */
export function sameJsonValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJsonValue(a[i], b[i])) return false;
    return true;
  }
  if (!isPlainObject(a) || !isPlainObject(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (let i = 0; i < ka.length; i++) {
    const k = ka[i]!;
    if (k !== kb[i] || !sameJsonValue(a[k], b[k])) return false;
  }
  return true;
}
