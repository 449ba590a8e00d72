import { readFileSync } from 'node:fs';
import { defineConfig, type Plugin } from 'vite';

const OPENAPI = new URL('../docs/api/openapi.json', import.meta.url).pathname;
const LISTS = 'virtual:openapi-lists';

/**
 * `virtual:openapi-lists`: the value lists the forms offer (subscribable events, key scopes, roles,
 * user states, file kinds), read at build time from the committed OpenAPI document — the server's
 * contract, never copied by hand. Only the lists enter the bundle, not the document. The build fails
 * if one of them is no longer where the document had it.
 */
function openapiLists(): Plugin {
  return {
    name: 'openapi-lists',
    resolveId: (id) => (id === LISTS ? `\0${LISTS}` : undefined),
    load(id) {
      if (id !== `\0${LISTS}`) return undefined;
      this.addWatchFile(OPENAPI);
      const doc = JSON.parse(readFileSync(OPENAPI, 'utf8')) as {
        paths: Record<string, Record<string, Operation>>;
      };
      interface Schema {
        enum?: string[];
        items?: Schema;
        properties?: Record<string, Schema>;
        anyOf?: Schema[];
      }
      interface Operation {
        requestBody?: { content: { 'application/json': { schema: Schema } } };
        parameters?: { name: string; schema: Schema }[];
      }
      const op = (path: string, method: string): Operation => {
        const o = doc.paths[path]?.[method];
        if (!o) throw new Error(`openapi-lists: ${method.toUpperCase()} ${path} is not in the document`);
        return o;
      };
      const bodyEnum = (path: string, method: string, field: string, array = false): string[] => {
        const p = op(path, method).requestBody?.content['application/json'].schema.properties?.[field];
        const values = array ? p?.items?.enum : p?.enum;
        if (!values)
          throw new Error(`openapi-lists: no enum for ${field} of ${method.toUpperCase()} ${path}`);
        return values;
      };
      const queryEnum = (path: string, name: string): string[] => {
        const values = op(path, 'get').parameters?.find((p) => p.name === name)?.schema.enum;
        if (!values) throw new Error(`openapi-lists: no enum for ${name} of GET ${path}`);
        return values;
      };
      const lists = {
        EVENT_TYPES: bodyEnum('/api/bots', 'post', 'events', true),
        SCOPES: bodyEnum('/api/bots/{botId}/api-keys', 'post', 'scopes', true),
        ROLES: bodyEnum('/api/users', 'post', 'role'),
        USER_STATUSES: bodyEnum('/api/users/{userId}', 'patch', 'status'),
        FILE_TYPES: queryEnum('/api/channels/{channelId}/files', 'type'),
        FILE_SORTS: queryEnum('/api/channels/{channelId}/files', 'sort'),
        // The MCP tools a key's grants may name (grants is nullable: its object is one of anyOf).
        GRANT_TOOLS: (() => {
          const g = op('/api/bots/{botId}/api-keys', 'post').requestBody?.content['application/json'].schema
            .properties?.grants;
          const values = (g?.anyOf ?? [g]).find((s) => s?.properties)?.properties?.tools?.items?.enum;
          if (!values)
            throw new Error('openapi-lists: no enum for grants.tools of POST /api/bots/{botId}/api-keys');
          return values;
        })(),
      };
      return Object.entries(lists)
        .map(([name, values]) => `export const ${name} = ${JSON.stringify(values)};`)
        .join('\n');
    },
  };
}

// Preact through Vite's own JSX transform (no Babel plugin): the automatic runtime from preact.
export default defineConfig({
  plugins: [openapiLists()],
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // One entry chunk for the chat; the admin screens are separate chunks loaded on /admin.
    modulePreload: { polyfill: false },
  },
  server: { proxy: { '/api': { target: 'http://127.0.0.1:3000', ws: true } } },
});
