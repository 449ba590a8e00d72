// Preload for bench/count-pg-statements.ts: counts pg Client#query calls by text; SIGUSR2 appends the counts to $PGCOUNT_OUT and resets them.
const pg = require(require.resolve('pg', { paths: [process.cwd(), __dirname] }));
const fs = require('fs');
const counts = new Map();
let n = 0;
const orig = pg.Client.prototype.query;
pg.Client.prototype.query = function (config, values) {
  let text = typeof config === 'string' ? config : config && config.text;
  if (text) {
    const full = text;
    text = text.replace(/\s+/g, ' ').slice(0, 220);
    if (!counts.has(text) && process.env.PGCOUNT_SAMPLES) {
      const vals = typeof config === 'string' ? values : (config.values ?? values);
      fs.appendFileSync(
        process.env.PGCOUNT_SAMPLES,
        JSON.stringify({ text: full, values: Array.isArray(vals) ? vals : [] }) + '\n',
      );
    }
    counts.set(text, (counts.get(text) || 0) + 1);
    n++;
  }
  return orig.apply(this, arguments);
};
function dump(tag) {
  // (A default in the system's temporary directory: a directory that does not exist would end the server.)
  const out =
    process.env.PGCOUNT_OUT || require('path').join(require('os').tmpdir(), `pg-counts-${process.pid}.txt`);
  const rows = [...counts].sort((a, b) => b[1] - a[1]).map(([t, c]) => `${c}\t${t}`);
  fs.appendFileSync(out, `=== ${tag} total ${n}\n` + rows.join('\n') + '\n');
}
process.on('SIGUSR2', () => {
  dump('usr2');
  counts.clear();
  n = 0;
});
process.on('exit', () => dump('exit'));
