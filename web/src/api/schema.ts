/**
 * The API's types are the Node SDK's, generated from the committed OpenAPI document
 * (docs/api/openapi.json → sdks/typescript/src/generated/api.ts): one source for the server's
 * contract, never copied by hand. Type-only, so nothing of the SDK enters the bundle.
 */
export type { paths } from '../../../sdks/typescript/src/generated/api';
