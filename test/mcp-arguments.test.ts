// MCP tools take one flat object of named arguments (a skill action's path parameters, query
// parameters and body keys; a command's recordId and input), and a name two of them share is
// refused when the app is generated (MCP_ARGUMENT_COLLISION), with the blueprint path to fix.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import { validateBlueprint } from '../generator/compile.ts';
import type { Diagnostic } from '../generator/diagnostics.ts';
import { mcpTools } from '../generator/contract/mcp-tools.ts';
import type { Blueprint } from '../generator/model/types.ts';
import type { SourceHost } from '../generator/source.ts';
import { ROOT } from './support/apps.ts';

const MCP_FIXTURE = fs.readFileSync(path.join(ROOT, 'test/fixtures/mcp/app.toml'), 'utf8');

/** The blueprint held in memory as /bp/app.toml. */
function validateText(text: string): { model?: Blueprint; diagnostics: Diagnostic[] } {
  const host: SourceHost = {
    readFile: (p) => (p === '/bp/app.toml' ? text : undefined),
    realPath: (p) => (p === '/bp/app.toml' || p === '/bp' ? p : undefined),
    display: (p) => path.basename(p),
  };
  return validateBlueprint('/bp/app.toml', host);
}

const collisions = (text: string) => validateText(text).diagnostics.filter((d) => d.code === 'MCP_ARGUMENT_COLLISION');

describe('MCP tool arguments (generator)', () => {
  it('are one flat object: path parameters, query parameters or body keys, and idempotencyKey', () => {
    const { model, diagnostics } = validateText(MCP_FIXTURE);
    expect(diagnostics.filter((d) => d.severity === 'error')).to.deep.equal([]);
    const tools = Object.fromEntries(mcpTools(model as Blueprint).map((t) => [t.name, t.inputSchema]));
    const keys = (name: string) => Object.keys(tools[name].properties as object);
    expect(keys('board_add_task')).to.deep.equal(['projectId', 'title', 'priority', 'note', 'idempotencyKey']);
    expect(tools.board_add_task.required).to.deep.equal(['projectId', 'title', 'idempotencyKey']);
    expect(keys('board_get_task')).to.deep.equal(['projectId', 'taskId']);
    expect(keys('board_list_tasks')).to.deep.equal(['projectId', 'limit', 'offset', 'level']);
    expect(keys('start_task')).to.deep.equal(['recordId', 'note', 'idempotencyKey']);
    for (const schema of Object.values(tools))
      expect(schema).to.include({ type: 'object', additionalProperties: false });
  });

  it('refuses a path parameter an update body also takes, at the action', () => {
    const text = MCP_FIXTURE.replace(
      '[[skill.board.actions]]\nname = "drop_task"',
      `[[skill.board.actions]]
name = "edit_task"
method = "PUT"
path = "/api/skills/board/projects/{projectId}/tasks/{taskId}"
entity = "Task"
action = "update"
mapParams = { taskId = "id" }
scopes = ["tasks.write"]

[[skill.board.actions]]
name = "drop_task"`,
    );
    const found = collisions(text);
    expect(found.map((d) => [d.severity, d.path])).to.deep.equal([['error', 'skill.board.actions.3']]);
    expect(found[0].message).to.equal(
      'MCP tool board_edit_task takes named arguments, and "projectId" is both a path parameter and a body key',
    );
    expect(found[0].hint).to.match(/mapParams/);
    expect(found[0].location?.line).to.be.a('number');
    // Named apart (mapParams), the same action is fine.
    const renamed = text.replace(
      'path = "/api/skills/board/projects/{projectId}/tasks/{taskId}"\n' +
        'entity = "Task"\naction = "update"\nmapParams = { taskId = "id" }',
      'path = "/api/skills/board/projects/{project}/tasks/{taskId}"\n' +
        'entity = "Task"\naction = "update"\nmapParams = { project = "projectId", taskId = "id" }',
    );
    expect(collisions(renamed)).to.deep.equal([]);
  });

  it('refuses a query parameter named as a path parameter', () => {
    const text = MCP_FIXTURE.replace(
      'query = { level = { type = "Integer", field = "priority" } }',
      'query = { projectId = { type = "Text", field = "projectId" } }',
    );
    expect(collisions(text).map((d) => d.message)).to.deep.equal([
      'MCP tool board_list_tasks takes named arguments, and "projectId" is both a path parameter and a query parameter',
    ]);
  });

  it('refuses command inputs named recordId or idempotencyKey, at the command', () => {
    const text = MCP_FIXTURE.replace(
      '[command.StartTask.input.note]',
      '[command.StartTask.input.recordId]\ntype = "Text"\n\n' +
        '[command.StartTask.input.idempotencyKey]\ntype = "Text"\n\n[command.StartTask.input.note]',
    );
    const found = collisions(text);
    expect(found.map((d) => d.path)).to.deep.equal(['command.StartTask', 'command.StartTask']);
    expect(found.map((d) => d.message)).to.deep.equal([
      'MCP tool start_task takes named arguments, and "recordId" is both the record id and an input',
      'MCP tool start_task takes named arguments, and "idempotencyKey" is both an input and the Idempotency-Key',
    ]);
  });
});
