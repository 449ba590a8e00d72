import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { RecordedExchange } from './client.js';

/**
 * Checks recorded exchanges against an OpenAPI document: each path and method must be documented, its
 * status declared, and its JSON body valid against the declared schema. Returns the problems found and
 * the statuses that were checked.
 */
export function checkAgainstOpenApi(
  doc: any,
  exchanges: RecordedExchange[],
): { problems: string[]; statuses: Set<number>; validated: number } {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  ajv.addSchema({ $id: 'doc', components: doc.components }, 'doc');
  // The most literal template wins: /api/bots/auth over /api/bots/{botId}.
  const templates = Object.keys(doc.paths).map((t) => ({
    t,
    re: new RegExp(`^${t.replace(/\{\w+\}/g, '[^/]+')}$`),
    literal: t.replace(/\{\w+\}/g, '').length,
  }));
  const problems: string[] = [];
  const statuses = new Set<number>();
  let validated = 0;
  for (const x of exchanges) {
    const match = templates.filter((t) => t.re.test(x.path)).sort((p, q) => q.literal - p.literal)[0];
    const op = match && doc.paths[match.t][x.method.toLowerCase()];
    if (!op) {
      problems.push(`${x.method} ${x.path}: not in the document`);
      continue;
    }
    const response = op.responses[String(x.status)];
    if (!response) {
      problems.push(`${x.method} ${match.t}: status ${x.status} is not documented`);
      continue;
    }
    statuses.add(x.status);
    const resolved = response.$ref ? doc.components.responses[response.$ref.split('/').pop()] : response;
    const schema = resolved.content?.['application/json']?.schema;
    if (!schema) {
      if (x.contentType?.includes('json'))
        problems.push(`${x.method} ${match.t} ${x.status}: answers JSON but documents no schema`);
      continue;
    }
    const validate = ajv.compile(
      JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/')),
    );
    validated++;
    if (!validate(x.body)) {
      problems.push(
        `${x.method} ${match.t} ${x.status}: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(x.body).slice(0, 200)}`,
      );
    }
  }
  return { problems, statuses, validated };
}
