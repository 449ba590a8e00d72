import { systemClock } from '../runtime/clock.js';
import { moveFilesToDatabase, type MoveReport } from '../storage/blobs-move.js';
import { describeDatabase, out, parse, readConfig, withDatabase, type Command } from './common.js';
import { CliError, EXIT } from './exit-codes.js';
import { assertCurrent, schemaStatus } from './schema.js';

const HELP = `Usage: workroom move-files [--keep] [--batch N]

Moves the bytes of uploaded files from this data directory (WORKROOM_DATA_DIR/files) into the database
(WORKROOM_BLOB_STORE=database; docs/SCALING.md, "Files"), one file at a time, while the server runs:
each file is served from disk until its row points to the database, and from the database after.
Interrupted, it loses nothing: run it again and it resumes. Progress is printed as it goes.

With several instances that kept files on their own disks, run it on each (with each one's data
directory); files whose bytes are on another instance's disk are counted as not found here.

  --keep     leave the files on disk once moved (default: removed)
  --batch N  files read from the database at a time (default 100)

Exit codes: 0 done (every file found was moved), 1 failed or some files not moved, 2 invalid
configuration, 6 migrations pending, 64 wrong arguments.`;

const mb = (n: number) => (n / 1_048_576).toFixed(1);
const line = (r: MoveReport) =>
  `moved ${r.moved} of ${r.total} files (${mb(r.bytes)} MB)` +
  (r.missing ? `, ${r.missing} not found on this disk` : '') +
  (r.mismatched ? `, ${r.mismatched} not matching their checksum (left on disk)` : '');

export const moveFilesCommand: Command = {
  name: 'move-files',
  summary: 'move uploaded files from the data directory into the database (resumable)',
  help: HELP,
  async run(args, env) {
    const { values } = parse('move-files', args, {
      keep: { type: 'boolean', default: false },
      batch: { type: 'string', default: '100' },
    });
    const batch = Number(values.batch);
    if (!Number.isInteger(batch) || batch < 1 || batch > 10_000)
      throw new CliError('--batch must be a whole number from 1 to 10000', EXIT.usage);
    const config = readConfig(env);
    return withDatabase(config, async ({ handle, storage }) => {
      assertCurrent(await schemaStatus(handle), 'move-files');
      out(`moving files from ${config.dataDir}/files into ${describeDatabase(config)}`);
      const report = await moveFilesToDatabase(storage, config.dataDir, systemClock, {
        batch,
        keep: values.keep,
        progress: (r) => out(line(r)),
      });
      out(`done: ${line(report)}`);
      if (config.blobStore !== 'database')
        out('note: new uploads still go to disk: set WORKROOM_BLOB_STORE=database');
      return report.missing + report.mismatched > 0 ? EXIT.failed : EXIT.ok;
    });
  },
};
