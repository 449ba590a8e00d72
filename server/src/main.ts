import { startServer } from './cli/start.js';

/**
 * Entry point of the built server (`node server/dist/main.js`, what `workroom start` and `npm start`
 * run): config from the environment, one server per data directory, graceful stop on SIGTERM/SIGINT
 * (cli/start.ts).
 */
void startServer(process.env);
