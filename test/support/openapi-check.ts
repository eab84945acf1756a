// Validates live responses against the generated OpenAPI document, so the tests check that the
// app does what its description says (and the description says what the app does).

import * as fs from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { isEmail } from '../../runtime-lib/core/values.ts';
import type { HttpResponse } from './apps.ts';

type Doc = {
  paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
  components: { responses: Record<string, unknown> };
};

export class OpenApiChecker {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  readonly doc: Doc;

  constructor(file: string) {
    this.doc = JSON.parse(fs.readFileSync(file, 'utf8')) as Doc;
    (addFormats as unknown as (a: Ajv2020) => void)(this.ajv);
    // ajv-formats has no idn-email (JSON Schema's address in any script): the app's own check is it.
    this.ajv.addFormat('idn-email', isEmail);
    this.ajv.addSchema(this.doc as object, 'openapi');
  }

  /** Throws unless `res` is a declared response of the operation, with a body fitting its schema. */
  check(method: string, pathTemplate: string, res: HttpResponse): void {
    const op = this.doc.paths[pathTemplate]?.[method.toLowerCase()];
    if (!op) throw new Error(`no operation ${method} ${pathTemplate} in openapi.json`);
    let response = op.responses[String(res.status)] as { $ref?: string; content?: Record<string, unknown> } | undefined;
    if (!response)
      throw new Error(
        `${method} ${pathTemplate} answered ${res.status}, which openapi.json does not declare: ${res.text}`,
      );
    let pointer = `#/paths/${escape(pathTemplate)}/${method.toLowerCase()}/responses/${res.status}`;
    if (response.$ref) {
      pointer = response.$ref;
      response = this.doc.components.responses[response.$ref.split('/').pop() as string] as typeof response;
    }
    if (!response?.content) {
      if (res.text !== '') throw new Error(`${method} ${pathTemplate} ${res.status} should have no body`);
      return;
    }
    const validate = this.ajv.getSchema(`openapi${pointer}/content/application~1json/schema`);
    if (!validate) throw new Error(`cannot resolve schema at ${pointer}`);
    if (!validate(res.body)) {
      throw new Error(
        `${method} ${pathTemplate} ${res.status} body does not fit openapi.json: ` +
          `${this.ajv.errorsText(validate.errors)}\n${res.text}`,
      );
    }
  }
}

const escape = (p: string): string => p.replace(/~/g, '~0').replace(/\//g, '~1');
