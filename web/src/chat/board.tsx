import { useEffect, useState } from 'preact/hooks';
import { api, describe, ok } from '../api/client';
import type { Priority, Task, TaskInput, TaskStatus } from '../api/types';
import type { Directory } from './directory';

type Exhaustive<T, A extends readonly T[]> = [T] extends [A[number]] ? A : never;
const statuses = ['todo', 'in_progress', 'review', 'done'] as const satisfies readonly TaskStatus[];
const STATUSES: Exhaustive<TaskStatus, typeof statuses> = statuses;
const priorities = ['low', 'medium', 'high', 'urgent'] as const satisfies readonly Priority[];
const PRIORITIES: Exhaustive<Priority, typeof priorities> = priorities;
const LABEL: Record<TaskStatus, string> = {
  todo: 'To do',
  in_progress: 'In progress',
  review: 'Review',
  done: 'Done',
};

/**
 * A topic's task board: four columns by status. A card moves by dragging it to another column or,
 * from the keyboard, with its "Move" select; both are one PATCH of the task's status. `version`
 * changes when a live task event for this topic arrives, which reloads the board.
 */
export function Board(props: { topicId: string; dir: Directory | null; version: number }) {
  const [tasks, setTasks] = useState<Task[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [title, setTitle] = useState('');
  const [assignee, setAssignee] = useState('');
  const [due, setDue] = useState('');
  const [priority, setPriority] = useState<Priority>('medium');
  const [dragging, setDragging] = useState<string | null>(null);
  const [status, setStatus] = useState('');

  const reload = () =>
    ok(
      api.GET('/api/topics/{topicId}/tasks', {
        params: { path: { topicId: props.topicId }, query: { status: 'all' } },
      }),
    )
      .then((r) => setTasks(r.items))
      .catch((e: unknown) => setError(describe(e)));
  useEffect(() => void reload(), [props.topicId, props.version]);

  async function add(e: Event) {
    e.preventDefault();
    setError(null);
    const body: TaskInput = { title, priority };
    if (assignee) body.assignee_id = assignee;
    if (due) body.due_date = due;
    try {
      await ok(
        api.POST('/api/topics/{topicId}/tasks', { params: { path: { topicId: props.topicId } }, body }),
      );
      setTitle('');
      setDue('');
      setStatus(`Task ${title} added.`);
      await reload();
    } catch (err) {
      setError(describe(err));
    }
  }

  async function move(task: Task, to: TaskStatus) {
    if (task.status === to) return;
    // Shown at once; put back if the server refuses.
    setTasks((ts) => ts?.map((t) => (t.id === task.id ? { ...t, status: to } : t)) ?? null);
    try {
      await ok(
        api.PATCH('/api/tasks/{taskId}', { params: { path: { taskId: task.id } }, body: { status: to } }),
      );
      setStatus(`${task.title} moved to ${LABEL[to]}.`);
    } catch (err) {
      setError(describe(err));
      await reload();
    }
  }

  const users = props.dir ? [...props.dir.users.values()].filter((u) => u.status === 'active') : [];
  const name = (id: string | null) =>
    id === null ? null : (props.dir?.users.get(id)?.display_name ?? 'Someone');

  return (
    <div class="board-wrap">
      <p class="sr-only" role="status">
        {status}
      </p>
      <form class="new-task" onSubmit={(e) => void add(e)} aria-label="New task">
        <label>
          <span>Title</span>
          <input required maxLength={500} value={title} onInput={(e) => setTitle(e.currentTarget.value)} />
        </label>
        <label>
          <span>Assignee</span>
          <select value={assignee} onChange={(e) => setAssignee(e.currentTarget.value)}>
            <option value="">Nobody</option>
            {users.map((u) => (
              <option key={u.id} value={u.id}>
                {u.display_name}
              </option>
            ))}
          </select>
        </label>
        <label>
          <span>Due date</span>
          <input type="date" value={due} onInput={(e) => setDue(e.currentTarget.value)} />
        </label>
        <label>
          <span>Priority</span>
          <select value={priority} onChange={(e) => setPriority(e.currentTarget.value as Priority)}>
            {PRIORITIES.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" class="primary">
          Add task
        </button>
      </form>
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <div class="board">
        {STATUSES.map((s) => {
          const column = (tasks ?? []).filter((t) => t.status === s);
          return (
            <section
              key={s}
              class={`column${dragging ? ' droppable' : ''}`}
              aria-labelledby={`col-${s}`}
              onDragOver={(e) => e.preventDefault()}
              onDrop={(e) => {
                e.preventDefault();
                const t = tasks?.find((x) => x.id === e.dataTransfer?.getData('text/plain'));
                setDragging(null);
                if (t) void move(t, s);
              }}
            >
              <h3 id={`col-${s}`}>
                {LABEL[s]} <span class="count">{column.length}</span>
              </h3>
              <ul aria-labelledby={`col-${s}`}>
                {column.map((t) => (
                  <li
                    key={t.id}
                    class={`task prio-${t.priority}`}
                    draggable
                    onDragStart={(e) => {
                      e.dataTransfer?.setData('text/plain', t.id);
                      setDragging(t.id);
                    }}
                    onDragEnd={() => setDragging(null)}
                  >
                    <article aria-label={t.title}>
                      <p class="task-title">{t.title}</p>
                      <p class="task-meta">
                        <span class={`prio prio-${t.priority}`}>{t.priority}</span>
                        {t.assignee_id !== null && <span>{name(t.assignee_id)}</span>}
                        {t.due_date !== null && <span>due {t.due_date}</span>}
                      </p>
                      <label class="move">
                        <span class="sr-only">Move {t.title}</span>
                        <select
                          value={t.status}
                          onChange={(e) => void move(t, e.currentTarget.value as TaskStatus)}
                        >
                          {STATUSES.map((x) => (
                            <option key={x} value={x}>
                              {LABEL[x]}
                            </option>
                          ))}
                        </select>
                      </label>
                    </article>
                  </li>
                ))}
              </ul>
            </section>
          );
        })}
      </div>
    </div>
  );
}
