// openapi.json: the document contract/openapi.ts builds as data, serialized once, keys in a fixed
// order.

import { openApiDocument } from '../contract/openapi.ts';
import type { Blueprint } from '../model/types.ts';

export function emitOpenApi(bp: Blueprint): string {
  return `${JSON.stringify(openApiDocument(bp), null, 2)}\n`;
}
