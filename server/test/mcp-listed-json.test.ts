import { describe, expect, it } from 'vitest';
import { ListedMessageJson, sameJsonValue } from '../src/transports/mcp/listed-json.js';

/**
 * The kept JSON of listed messages (transports/mcp/listed-json.ts) answers exactly what JSON.stringify
 * answers, for the same value and for every change of it; the server-level check (edits, reactions,
 * deletions through REST, then read_messages) is in mcp-structured.test.ts.
 */
const message = (id: string, over: Record<string, unknown> = {}) => ({
  id,
  org_id: 'o',
  channel_id: 'c',
  topic_id: null,
  dm_room_id: null,
  sender_type: 'bot',
  sender_id: 'b',
  bot_id: 'b',
  content: `text of ${id} "quoted" \\ \n ü 👍`,
  content_html: null,
  actions: null,
  created_at: '2030-01-01T00:00:00.000Z',
  edited_at: null,
  deleted_at: null,
  reactions: [] as unknown[],
  ...over,
});

/** The same entries with `reactions` first. */
const reordered = ({ reactions, ...rest }: ReturnType<typeof message>) => ({ reactions, ...rest });

describe('ListedMessageJson', () => {
  it('answers JSON.stringify of the list, first and again, for fresh objects of the same value', () => {
    const j = new ListedMessageJson();
    const list = () => ({ items: [message('a'), message('b'), message('c')] });
    expect(j.list(list())).toBe(JSON.stringify(list()));
    expect(j.list(list())).toBe(JSON.stringify(list()));
    expect(j.list({ items: [] })).toBe('{"items":[]}');
  });

  it('a changed message is serialized again: any field, nested actions and reactions, key order, a key more or less', () => {
    const j = new ListedMessageJson();
    const actions = [{ type: 'button', id: 'ok', label: 'OK', value: '1' }];
    const base = message('a', { actions, reactions: [{ emoji: '👍', count: 1 }] });
    j.list({ items: [base] });
    const variants: Record<string, unknown>[] = [
      message('a', { actions, reactions: [{ emoji: '👍', count: 2 }] }),
      message('a', {
        actions,
        reactions: [
          { emoji: '👍', count: 1 },
          { emoji: '🎉', count: 1 },
        ],
      }),
      message('a', { actions, reactions: [] }),
      message('a', { actions: [{ ...actions[0], label: 'Yes' }], reactions: [{ emoji: '👍', count: 1 }] }),
      message('a', { actions: null, reactions: [{ emoji: '👍', count: 1 }] }),
      message('a', { content: 'edited', actions, reactions: [{ emoji: '👍', count: 1 }] }),
      message('a', {
        edited_at: '2030-01-02T00:00:00.000Z',
        actions,
        reactions: [{ emoji: '👍', count: 1 }],
      }),
      reordered(message('a', { actions, reactions: [{ emoji: '👍', count: 1 }] })), // same fields, other order
      { ...message('a', { actions, reactions: [{ emoji: '👍', count: 1 }] }), extra: 1 },
      { ...message('a', { actions, reactions: [{ emoji: '👍', count: 1 }] }), content_html: undefined },
      message('a', { actions, reactions: [{ emoji: '👍', count: 1 }], created_at: new Date(0) }),
    ];
    for (const v of variants) {
      expect(j.list({ items: [v] })).toBe(JSON.stringify({ items: [v] }));
      expect(j.list({ items: [base] })).toBe(JSON.stringify({ items: [base] }));
    }
  });

  it('anything but a list of messages is serialized whole', () => {
    const j = new ListedMessageJson();
    for (const v of [
      null,
      'x',
      [1, 2],
      { items: [message('a')], next_cursor: 'n' },
      { other: 1 },
      { items: [1, 'two', null, { no_id: true }, message('a')] },
    ])
      expect(j.list(v)).toBe(JSON.stringify(v));
  });

  it('sameJsonValue: equal only when JSON.stringify would write the same', () => {
    expect(sameJsonValue({ a: 1, b: [1, { c: null }] }, { a: 1, b: [1, { c: null }] })).toBe(true);
    expect(sameJsonValue({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(false);
    expect(sameJsonValue({ a: NaN }, { a: NaN })).toBe(false); // safe side: serialized again
    expect(sameJsonValue([1, 2], { 0: 1, 1: 2 })).toBe(false);
    expect(sameJsonValue(new Date(0), new Date(0))).toBe(false);
  });
});
