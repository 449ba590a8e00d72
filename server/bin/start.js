// `npm start` (package.json: "exec node server/bin/start.js": exec, so that the SIGTERM npm forwards
// reaches this process and not a shell in between): builds the server only when server/dist is missing
// or older than its sources, then runs it in this very process, like `workroom start`.
import { buildIfStale } from './build-if-stale.js';

buildIfStale('npm start');
await import(new URL('../dist/main.js', import.meta.url).href);
