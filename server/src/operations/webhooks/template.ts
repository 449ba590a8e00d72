/**
 * The template of an incoming webhook in template mode: it turns any JSON body (a GitHub push, a CI
 * result, a monitoring alert) into the message's Markdown. A small, logic-less language (a subset of
 * Mustache/Handlebars, nothing executes):
 *
 * - `{{path}}`: the value at a dotted path (`repository.full_name`, `commits.0.message`, `commits.length`);
 *   missing → empty; objects and arrays as compact JSON. `{{path | fallback text}}` when it is empty.
 * - `{{#each path}} … {{/each}}`: once per element (at most 100); inside, paths are looked up in the element
 *   first, then outside; `{{this}}` is the element, `{{@index}}` its index (from 0).
 * - `{{#if path}} … {{else}} … {{/if}}`: when the value is present and not false, 0, '' or [].
 *
 * Parsed when the webhook is created (a broken template is refused then, naming what is wrong), rendered
 * on every request.
 */

export const TEMPLATE_MAX_CHARS = 10_000;
const EACH_MAX = 100;

type Node =
  | { kind: 'text'; text: string }
  | { kind: 'value'; path: string; fallback: string | undefined }
  | { kind: 'each'; path: string; body: Node[] }
  | { kind: 'if'; path: string; then: Node[]; else: Node[] };

export class TemplateError extends Error {}

const PATH = /^(this|@index|[A-Za-z0-9_$@-]+(?:\.[A-Za-z0-9_$@-]+|\[\d+\])*)$/;

function checkPath(path: string, at: number): string {
  if (!PATH.test(path)) throw new TemplateError(`"${path}" at character ${at} is not a path such as a.b.0.c`);
  return path.replace(/\[(\d+)\]/g, '.$1');
}

/** Parses a template; throws TemplateError naming the problem and where. */
export function parseTemplate(src: string): Node[] {
  const tag = /\{\{\s*([^{}]*?)\s*\}\}/g;
  const root: Node[] = [];
  const stack: { node: Node | null; into: Node[]; at: number }[] = [{ node: null, into: root, at: 0 }];
  let last = 0;
  for (const m of src.matchAll(tag)) {
    const at = m.index;
    const top = stack[stack.length - 1]!;
    if (at > last) top.into.push({ kind: 'text', text: src.slice(last, at) });
    last = at + m[0].length;
    const body = m[1]!;
    if (body.startsWith('#each ') || body.startsWith('#if ')) {
      const [word, ...rest] = body.slice(1).split(/\s+/);
      const path = checkPath(rest.join(' '), at);
      const node: Node =
        word === 'each' ? { kind: 'each', path, body: [] } : { kind: 'if', path, then: [], else: [] };
      top.into.push(node);
      stack.push({ node, into: node.kind === 'each' ? node.body : (node as { then: Node[] }).then, at });
    } else if (body === 'else') {
      if (top.node?.kind !== 'if') throw new TemplateError(`{{else}} at character ${at} is outside {{#if}}`);
      top.into = top.node.else;
    } else if (body === '/each' || body === '/if') {
      const want = body.slice(1);
      if (top.node?.kind !== want)
        throw new TemplateError(`{{${body}}} at character ${at} closes nothing open`);
      stack.pop();
    } else {
      const bar = body.indexOf('|');
      const path = checkPath((bar >= 0 ? body.slice(0, bar) : body).trim(), at);
      const fallback = bar >= 0 ? body.slice(bar + 1).trim() : undefined;
      top.into.push({ kind: 'value', path, fallback });
    }
  }
  if (stack.length > 1) {
    const open = stack[stack.length - 1]!;
    throw new TemplateError(`{{#${open.node!.kind}}} at character ${open.at} is never closed`);
  }
  const rest = src.slice(last);
  if (rest.includes('{{')) throw new TemplateError('a "{{" is never closed by "}}"');
  if (rest) root.push({ kind: 'text', text: rest });
  return root;
}

type Scope = { value: unknown; index: number | undefined; parent: Scope | undefined };

function lookup(path: string, scope: Scope): unknown {
  if (path === 'this') return scope.value;
  if (path === '@index') return scope.index;
  const keys = path.split('.');
  for (let s: Scope | undefined = scope; s; s = s.parent) {
    let v: unknown = s.value;
    let found = true;
    for (const k of keys) {
      if (v !== null && typeof v === 'object' && Object.prototype.hasOwnProperty.call(v, k)) {
        v = (v as Record<string, unknown>)[k];
      } else {
        found = false;
        break;
      }
    }
    if (found) return v;
  }
  return undefined;
}

const show = (v: unknown): string =>
  v === undefined || v === null
    ? ''
    : typeof v === 'string'
      ? v
      : typeof v === 'object'
        ? JSON.stringify(v)
        : String(v as number | boolean);

const truthy = (v: unknown): boolean =>
  !(
    v === undefined ||
    v === null ||
    v === false ||
    v === 0 ||
    v === '' ||
    (Array.isArray(v) && v.length === 0)
  );

function run(nodes: Node[], scope: Scope, out: string[]): void {
  for (const n of nodes) {
    switch (n.kind) {
      case 'text':
        out.push(n.text);
        break;
      case 'value': {
        const s = show(lookup(n.path, scope));
        out.push(s === '' && n.fallback !== undefined ? n.fallback : s);
        break;
      }
      case 'each': {
        const v = lookup(n.path, scope);
        const items = Array.isArray(v) ? v : v !== null && typeof v === 'object' ? Object.values(v) : [];
        items
          .slice(0, EACH_MAX)
          .forEach((item, index) => run(n.body, { value: item, index, parent: scope }, out));
        break;
      }
      case 'if':
        run(truthy(lookup(n.path, scope)) ? n.then : n.else, scope, out);
        break;
    }
  }
}

/** The message a JSON body renders to (trimmed; '' when the template produced nothing). */
export function renderTemplate(template: Node[], body: unknown): string {
  const out: string[] = [];
  run(template, { value: body, index: undefined, parent: undefined }, out);
  return out.join('').trim();
}
