// MCP_ARGUMENT_COLLISION: an MCP tool takes one flat object of named arguments, merging its REST
// request's path parameters, query parameters and body keys (a command's recordId, input keys and
// idempotencyKey); a name two of them share could not say which one it sets (contract/mcp-tools.ts).

import type { CompileContext } from '../context.ts';
import { hasErrors } from '../diagnostics.ts';
import { argumentCollisions, toolInputs } from '../contract/mcp-tools.ts';
import type { Blueprint } from '../model/types.ts';

const ORIGIN: Record<string, string> = {
  path: 'a path parameter',
  query: 'a query parameter',
  body: 'a body key',
  recordId: 'the record id',
  input: 'an input',
  idempotencyKey: 'the Idempotency-Key',
};

/**
 * Runs on a model without errors only: the tools are read from the OpenAPI document, which a
 * blueprint with errors may not yield.
 */
export function checkMcpArguments(ctx: CompileContext, bp: Blueprint): void {
  if (hasErrors(ctx.diagnostics)) return;
  for (const tool of toolInputs(bp)) {
    for (const { argument, from } of argumentCollisions(tool)) {
      ctx.report(
        'MCP_ARGUMENT_COLLISION',
        tool.declaredAt,
        `MCP tool ${tool.name} takes named arguments, and "${argument}" is both ${origins(from)}`,
        {
          hint:
            'rename one of them (a path parameter, with mapParams naming its field; a query parameter; ' +
            'a body key or input) so that each argument has one meaning',
        },
      );
    }
  }
}

function origins(from: readonly string[]): string {
  return from.map((f) => ORIGIN[f]).join(' and ');
}
