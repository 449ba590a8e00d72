/** node-postgres's value conversion for the wire (exported as `pg/lib/utils.js`; @types/pg omits it). */
declare module 'pg/lib/utils.js' {
  const utils: {
    /** A JavaScript value as pg sends it: Dates, arrays, Buffers and objects (JSON) converted. */
    prepareValue(value: unknown): unknown;
  };
  export default utils;
}
