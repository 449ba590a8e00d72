import { describe, expect, it } from 'vitest';
import { COLLECT_LIMITS, type Reply } from '../src/bots/collect/model.js';
import { defaultRemind, parseCollect, parseCreate, parseDue } from '../src/bots/collect/parse.js';
import { ackText, requestText, resultChunks } from '../src/bots/collect/render.js';
import { parseTaskNotify } from '../src/bots/task-notify/parse.js';
import { classify, digestText, eventLine, listText } from '../src/bots/task-notify/render.js';
import type { Sub } from '../src/bots/task-notify/model.js';
import { jsonBytes } from '../src/bots/platform-kit/text.js';

/** The collection and task notification bots' pure parts: parsing, deadlines, texts. */

const err = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('expected an error');
};

// Wednesday 2026-11-25 10:00 UTC (11:00 in Berlin).
const NOW = Date.parse('2026-11-25T10:00:00Z');

describe('/collect parsing', () => {
  it('parses the example of the issue: due:friday is the coming Friday at 17:00', () => {
    expect(parseCollect('"Send your weekly report" due:friday', NOW)).toEqual({
      kind: 'create',
      create: {
        prompt: 'Send your weekly report',
        due_at: '2026-11-27T17:00:00.000Z',
        remind_at: '2026-11-26T17:00:00.000Z', // a day before (the collection runs two days or more)
        tz: 'UTC',
        share: 'dm',
      },
    });
  });

  it('knows every form of due:, in the given zone', () => {
    const at = (v: string, tz = 'UTC') => new Date(parseDue(v, tz, NOW)).toISOString();
    expect(at('fri@12:00', 'Europe/Berlin')).toBe('2026-11-27T11:00:00.000Z');
    expect(at('wednesday')).toBe('2026-11-25T17:00:00.000Z'); // today, still before 17:00
    expect(at('wed@09:00')).toBe('2026-12-02T09:00:00.000Z'); // today's has passed: next week
    expect(at('2026-12-01')).toBe('2026-12-01T17:00:00.000Z');
    expect(at('2026-12-01@8:30')).toBe('2026-12-01T08:30:00.000Z');
    expect(at('tomorrow')).toBe('2026-11-26T17:00:00.000Z');
    expect(at('15:30')).toBe('2026-11-25T15:30:00.000Z');
    expect(at('2h')).toBe('2026-11-25T12:00:00.000Z');
    expect(at('90s')).toBe('2026-11-25T10:01:30.000Z');
    expect(err(() => parseDue('09:00', 'UTC', NOW))).toMatch(/has passed today/);
    expect(err(() => parseDue('someday', 'UTC', NOW))).toMatch(/is not a deadline/);
    expect(err(() => parseDue('fri@25:00', 'UTC', NOW))).toMatch(/not a time/);
  });

  it('options, limits and clear errors', () => {
    const c = parseCreate('Send slides due:2h remind:off share:channel tz:europe/berlin', NOW);
    expect(c).toMatchObject({
      prompt: 'Send slides',
      remind_at: null,
      share: 'channel',
      tz: 'Europe/Berlin',
    });
    expect(parseCreate('"x" due:3h', NOW).remind_at).toBe('2026-11-25T12:00:00.000Z'); // an hour before
    expect(defaultRemind(60 * 60_000)).toBe(30 * 60_000); // half-way for short ones
    expect(err(() => parseCreate('"x"', NOW))).toMatch(/Give a deadline/);
    expect(err(() => parseCreate('due:2h', NOW))).toMatch(/Say what to send/);
    expect(err(() => parseCreate(`"${'x'.repeat(501)}" due:2h`, NOW))).toMatch(/longer than 500/);
    expect(err(() => parseCreate('"x" due:30s', NOW))).toMatch(/at least a minute/);
    expect(err(() => parseCreate('"x" due:31d', NOW))).toMatch(/at most 30 days/);
    expect(err(() => parseCreate('"x" due:2h remind:3h', NOW))).toMatch(/before the request itself/);
    expect(err(() => parseCreate('"x" due:2h share:everyone', NOW))).toMatch(/share: is channel/);
    expect(err(() => parseCreate('"x" due:2h tz:Nowhere/City', NOW))).toMatch(/not an IANA time zone/);
    expect(parseCollect('list', NOW)).toEqual({ kind: 'list' });
    expect(parseCollect('close 1a2b3c4d', NOW)).toEqual({ kind: 'close', ref: '1a2b3c4d' });
    expect(err(() => parseCollect('cancel x!', NOW))).toMatch(/takes the reference/);
  });
});

describe('collection texts', () => {
  const head = {
    prompt: 'Send your *weekly* report',
    channel_name: 'team',
    requester_name: 'Ann',
    due_at: '2026-11-27T17:00:00.000Z',
    tz: 'UTC',
  };
  it('asks and acknowledges, naming the next request when one waits', () => {
    expect(requestText(head)).toContain('> Send your *weekly* report'); // the requester's own Markdown, quoted
    expect(requestText(head)).toContain('Due Fri 27 Nov 2026, 17:00 (UTC)');
    expect(ackText(head, 2, { ...head, prompt: 'Slides', channel_name: 'ops' })).toContain(
      'Your next message answers the next request: “Slides” (#ops)',
    );
    expect(ackText(head, 0, null)).toContain('Send more messages to add to it');
  });

  it('puts every reply with its files in the result, and who did not reply; splits long results', () => {
    const reply = (user: string, text: string, files = 0): Reply => ({
      user_id: user,
      closed: true,
      parts: [
        {
          message_id: `${user}-m`,
          text,
          files: Array.from({ length: files }, (_, i) => ({
            id: `f${i}`,
            filename: `r${i}.pdf`,
            size: 2048,
          })),
          at: '',
        },
      ],
    });
    const chunks = resultChunks(
      { ...head, recipients: ['b', 'c', 'd'], left_out: 0 },
      new Map([
        ['b', reply('b', 'Done: X\nNext: Y', 1)],
        ['c', reply('c', 'all good')],
      ]),
      new Map([
        ['b', 'Bob'],
        ['c', 'Cy'],
        ['d', 'Dee'],
      ]),
    );
    expect(chunks).toHaveLength(1);
    expect(chunks[0]).toContain('2 of 3 replied · no reply: **Dee**');
    expect(chunks[0]).toContain('**Bob**\n> Done: X\n> Next: Y\n> 📎 [r0.pdf](/api/files/f0) (2 KB)');
    const many = Array.from({ length: 200 }, (_, i) => `u${i}`);
    const big = resultChunks(
      { ...head, recipients: many, left_out: 5 },
      new Map(many.map((u) => [u, reply(u, '€'.repeat(COLLECT_LIMITS.replyChars))])),
      new Map(),
    );
    expect(big.length).toBeGreaterThan(10);
    for (const c of big) {
      expect(c.length).toBeLessThanOrEqual(COLLECT_LIMITS.resultChars);
      expect(jsonBytes(c)).toBeLessThanOrEqual(COLLECT_LIMITS.resultBytes);
    }
    expect(big[0]).toContain('5 more members were not asked');
    expect(big.join('').match(/\*\*a former member\*\*/g)!.length).toBe(200);
  });
});

describe('/tasknotify parsing', () => {
  it('parses a source, events and options', () => {
    expect(
      parseTaskNotify('add "Website relaunch/Design" created status overdue at:8:30 tz:Europe/Berlin soon:2'),
    ).toEqual({
      kind: 'add',
      add: {
        project: 'Website relaunch',
        topic: 'Design',
        events: ['created', 'status', 'overdue'],
        at: '08:30',
        tz: 'Europe/Berlin',
        soon_days: 2,
      },
    });
    expect(parseTaskNotify('add Backend')).toMatchObject({
      add: {
        project: 'Backend',
        topic: null,
        events: ['created', 'assigned', 'status', 'due_soon', 'overdue'],
      },
    });
    expect(parseTaskNotify('add Backend due-soon status_changed')).toMatchObject({
      add: { events: ['status', 'due_soon'] },
    });
    expect(parseTaskNotify('remove 2')).toEqual({ kind: 'remove', target: { index: 2 } });
    expect(parseTaskNotify('remove Backend/API')).toEqual({
      kind: 'remove',
      target: { project: 'Backend', topic: 'API' },
    });
  });

  it('refuses what it does not understand', () => {
    expect(err(() => parseTaskNotify('add'))).toMatch(/Name the project/);
    expect(err(() => parseTaskNotify('add Backend deleted'))).toMatch(/not an event/);
    expect(err(() => parseTaskNotify('add Backend/'))).toMatch(/Name the topic/);
    expect(err(() => parseTaskNotify('add Backend at:9'))).toMatch(/not a time/);
    expect(err(() => parseTaskNotify('add Backend soon:30'))).toMatch(/from 0 \(due today\) to 14/);
    expect(err(() => parseTaskNotify('remove'))).toMatch(/takes one thing/);
    expect(err(() => parseTaskNotify('mute'))).toMatch(/Unknown subcommand/);
  });
});

describe('task notification texts', () => {
  const task = {
    id: 'abcdef0123',
    title: 'Ship *it*',
    status: 'todo',
    priority: 'high',
    assignee_id: 'u1',
    due_date: '2026-11-30',
  };
  const place = { project: 'Web', topic: 'Design', link: 'http://x/#/topic/t' };

  it('writes one line per event', () => {
    expect(eventLine({ kind: 'created', task, assignee: 'Ann', by: 'Bob' }, place)).toBe(
      '🆕 **Task created** in [Web › Design](http://x/#/topic/t): `cdef0123` Ship \\*it\\* — assigned to **Ann** · due 2026-11-30 · high · by Bob',
    );
    expect(
      eventLine({ kind: 'assigned', task, assignee: null, previous: 'Ann', by: 'Bob' }, place),
    ).toContain(
      '**Task unassigned** in [Web › Design](http://x/#/topic/t): `cdef0123` Ship \\*it\\* — unassigned (was Ann)',
    );
    expect(
      eventLine({ kind: 'status', task, status: 'in_progress', previous: 'todo', by: 'Ann' }, place),
    ).toContain('— todo → **in progress** · by Ann');
  });

  it('classifies due soon and overdue for the daily check', () => {
    const t = (id: string, due: string | null, status = 'todo') => ({
      ...task,
      id,
      due_date: due,
      status,
      topic: 'T',
    });
    const tasks = [
      t('a', '2026-11-24'),
      t('b', '2026-11-25'),
      t('c', '2026-11-26'),
      t('d', '2026-11-27'),
      t('e', '2026-11-20', 'done'),
      t('f', null),
    ];
    const all = classify(tasks, '2026-11-25', 1, ['due_soon', 'overdue']);
    expect(all.overdue.map((x) => x.id)).toEqual(['a']);
    expect(all.soon.map((x) => x.id)).toEqual(['b', 'c']);
    expect(classify(tasks, '2026-11-25', 0, ['due_soon']).soon.map((x) => x.id)).toEqual(['b']);
    expect(classify(tasks, '2026-11-25', 1, ['overdue']).soon).toEqual([]);
    const text = digestText(
      { project: 'Web', topic: null, link: 'L' },
      '2026-11-25',
      all,
      new Map([['u1', 'Ann']]),
    )!;
    expect(text).toContain('**Overdue (1)**\n- `a` Ship \\*it\\* · due 2026-11-24 · Ann · T');
    expect(text).toContain('**Due soon (2)**');
    expect(
      digestText(
        { project: 'Web', topic: null, link: 'L' },
        '2026-11-25',
        { overdue: [], soon: [] },
        new Map(),
      ),
    ).toBeNull();
  });

  it('lists subscriptions', () => {
    const s: Sub = {
      id: 's',
      kind: 'topic',
      project_id: 'p',
      project_name: 'Web',
      topic_id: 't',
      topic_name: 'Design',
      events: ['created', 'due_soon'],
      at: '09:00',
      tz: 'UTC',
      soon_days: 1,
      added_by: 'u',
      added_at: '',
      next: null,
    };
    expect(listText([s])).toContain(
      '1. topic **Web › Design**: created, due soon · daily check 09:00 (UTC), soon = within 1 day',
    );
    expect(listText([])).toContain('no task notifications');
  });
});
