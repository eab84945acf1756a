// The compiler as one function: blueprint path in; model, files and diagnostics out. Reads the
// blueprint through the SourceHost and never writes; the CLI's write stage does that.

import * as path from 'node:path';
import { createContext } from './context.ts';
import { hasErrors, type Diagnostic } from './diagnostics.ts';
import { emitApp } from './emit/index.ts';
import type { PreviousOutput } from './emit/migrations.ts';
import { buildModel } from './model/build.ts';
import type { Blueprint } from './model/types.ts';
import { parseBlueprint } from './parse/load.ts';
import type { SourceHost } from './source.ts';
import { checkAccessRules } from './validate/access-rules.ts';
import { checkHiddenFieldFilters } from './validate/hidden-field-filters.ts';
import { checkDeclarations } from './validate/declarations/index.ts';
import { checkMcpArguments } from './validate/mcp-arguments.ts';
import { checkReferences } from './validate/references/index.ts';
import { checkSecurity } from './validate/security/warnings.ts';
import { checkShapes } from './validate/shape.ts';

export interface ValidateResult {
  model?: Blueprint;
  diagnostics: Diagnostic[];
}

/**
 * Parse and validate: every problem of the blueprint, errors and warnings, at once. The stages:
 * parse, shape (JSON Schema), declaration rules, model, cross-reference rules (names in
 * conditions included), access rules, security warnings, MCP tool arguments.
 */
export function validateBlueprint(rootPath: string, host: SourceHost): ValidateResult {
  const parsed = parseBlueprint(rootPath, host);
  const diagnostics = [...parsed.diagnostics];
  if (!parsed.blueprint) return { diagnostics };
  diagnostics.push(...checkShapes(parsed.blueprint));
  const ctx = createContext(parsed.blueprint, host, diagnostics);
  checkDeclarations(ctx);
  const model = buildModel(ctx);
  checkReferences(ctx, model);
  checkAccessRules(ctx, model);
  checkHiddenFieldFilters(ctx, model);
  checkSecurity(ctx, model);
  checkMcpArguments(ctx, model);
  return { model, diagnostics: sortDiagnostics(diagnostics) };
}

export interface CompileResult extends ValidateResult {
  /** Files bp owns. */
  files?: Map<string, string>;
  /** Files bp writes only where they are missing (src/extend.ts): the team's. */
  scaffold?: Map<string, string>;
}

export async function compile(
  rootPath: string,
  host: SourceHost,
  previous: PreviousOutput,
  outDir: string,
): Promise<CompileResult> {
  const { model, diagnostics } = validateBlueprint(rootPath, host);
  if (!model || hasErrors(diagnostics)) return { model, diagnostics };
  const { files, scaffold } = await emitApp(model, {
    blueprintName: path.basename(rootPath),
    previous,
    outDir: path.resolve(outDir),
  });
  return { model, diagnostics, files, scaffold };
}

/** Source order (file, line, column), so output reads top to bottom like the blueprint. */
function sortDiagnostics(diagnostics: Diagnostic[]): Diagnostic[] {
  const key = (d: Diagnostic) => [d.location?.file ?? '', d.location?.line ?? 0, d.location?.column ?? 0] as const;
  return diagnostics
    .map((d, i) => ({ d, i }))
    .sort((a, b) => {
      const [fa, la, ca] = key(a.d);
      const [fb, lb, cb] = key(b.d);
      return fa < fb ? -1 : fa > fb ? 1 : la - lb || ca - cb || a.i - b.i;
    })
    .map(({ d }) => d);
}
