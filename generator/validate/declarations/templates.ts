// The blueprint's templates (a page's `template`, its `layoutSlots`, [auth.pages]): a template
// file must be inside the root blueprint's folder and exist, and every template must compile, with
// the same engines and settings the generated app compiles it with (runtime pages/custom-template.ts),
// so a template that would fail when the app starts stops the generation instead. A broken file
// template is reported at its own line and column; a broken inline one inside the blueprint's string.
// [auth.pages] without the email provider are not served (a warning).

import type { CompileContext } from '../../context.ts';
import { list, singleSection } from '../../model/raw.ts';
import { isTable } from '../../parse/load.ts';
import type { KeyPath } from '../../parse/locate.ts';
import { templateDeclarations, templateKey } from '../../parse/templates.ts';
import { compileTemplate, TemplateSyntaxError } from '../../../runtime-lib/pages/custom-template.ts';

export function checkTemplates(ctx: CompileContext): void {
  const auth = singleSection(ctx.parsed, 'auth');
  if (isTable(auth.pages) && !list(auth.providers).includes('email')) {
    for (const page of Object.keys(auth.pages)) {
      ctx.report(
        'NOT_GENERATED',
        ['auth', 'pages', page],
        `[auth.pages] ${page} is a page of the "email" provider, which this blueprint does not use: it is not served`,
        { severity: 'warning' },
      );
    }
  }
  for (const section of ctx.parsed.sections) {
    for (const { keys, raw, defaultType } of templateDeclarations(section)) {
      // A wrong engine, type or source is the shape check's error already.
      if (ctx.failed(keys) || typeof raw.source !== 'string') continue;
      const engine = raw.engine === 'handlebars' ? 'handlebars' : 'liquid';
      if ((raw.type ?? defaultType) === 'file') checkFile(ctx, keys, raw.source, engine);
      else checkInline(ctx, keys, raw.source, engine);
    }
  }
}

function checkFile(ctx: CompileContext, keys: KeyPath, source: string, engine: 'handlebars' | 'liquid'): void {
  const at = [...keys, 'source'];
  const file = ctx.parsed.templateFiles.get(templateKey(keys));
  if (!file) return;
  if (file.outside) {
    ctx.report(
      'TEMPLATE_OUTSIDE_ROOT',
      at,
      `template "${source}" leaves the blueprint's root folder ${ctx.host.display(ctx.parsed.rootDir)}`,
      { hint: 'keep template files in the folder of the root blueprint or below it' },
    );
    return;
  }
  if (file.text === undefined) {
    ctx.report('TEMPLATE_NOT_FOUND', at, `template file ${file.display} does not exist`, {
      hint: 'template paths are relative to the TOML file that declares them; an inline template needs type = "inline"',
    });
    return;
  }
  const problem = syntaxError(engine, file.text, source);
  if (!problem) return;
  ctx.report('TEMPLATE_INVALID', at, `${engine} template ${file.display} does not compile: ${problem.reason}`, {
    location:
      problem.line === undefined ? undefined : { file: file.display, line: problem.line, column: problem.column ?? 1 },
  });
}

function checkInline(ctx: CompileContext, keys: KeyPath, text: string, engine: 'handlebars' | 'liquid'): void {
  const problem = syntaxError(engine, text, templateKey(keys));
  if (!problem) return;
  const at = [...keys, 'source'];
  const offset = problem.line === undefined ? undefined : offsetOf(text, problem.line, problem.column ?? 1);
  ctx.report('TEMPLATE_INVALID', at, `inline ${engine} template does not compile: ${problem.reason}`, {
    within: offset === undefined ? undefined : { offset, part: 'value' },
  });
}

function syntaxError(engine: 'handlebars' | 'liquid', text: string, source: string): TemplateSyntaxError | undefined {
  try {
    compileTemplate({ engine, text, source });
    return undefined;
  } catch (err) {
    if (err instanceof TemplateSyntaxError) return err;
    throw err;
  }
}

/** The UTF-16 offset of a 1-based line and column in `text`. */
function offsetOf(text: string, line: number, column: number): number {
  let offset = 0;
  for (let l = 1; l < line; l++) {
    const next = text.indexOf('\n', offset);
    if (next === -1) break;
    offset = next + 1;
  }
  return Math.min(offset + column - 1, text.length);
}
