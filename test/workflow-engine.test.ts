// The engine's two ways of running a workflow's steps (in the workflow's transaction, or each step
// alone) over the one definition of each step type (runtime-lib/workflows/step-types.ts): a loop in
// a transactional workflow keeps its outside steps for after the commit and still gives each its
// slot in the loop's result, as the same loop run alone does; a command with a handler, which
// commits on its own, cannot join a transaction. On a real SQLite database, its commits observed.

import * as fs from 'node:fs';
import { expect } from 'chai';
import type { Actor } from '../runtime-lib/core/actor.ts';
import { AppError } from '../runtime-lib/core/errors.ts';
import type { Database } from '../runtime-lib/data/database.ts';
import { openSqlite, type SqliteDatabase } from '../runtime-lib/data/sqlite.ts';
import {
  runWorkflow,
  type StepSpec,
  type WorkflowRuntime,
  type WorkflowSpec,
} from '../runtime-lib/workflows/engine.ts';
import { freshDir } from './support/apps.ts';

const ACTOR: Actor = { kind: 'user', id: 'u1', roles: [] };

describe('workflow engine: one step type, two ways of running it', () => {
  let dir: string;
  let sqlite: SqliteDatabase;
  /** What happened, in order: each commit, and each plugin call with what it was given. */
  const log: string[] = [];
  let rt: WorkflowRuntime;

  before(() => {
    dir = freshDir('workflow-engine');
    sqlite = openSqlite('file:./app.db', dir);
    const db: Database = Object.create(sqlite);
    db.write = async (unit, trace) => {
      const value = await sqlite.write(unit, trace);
      log.push('commit');
      return value;
    };
    rt = {
      db,
      stores: new Map(),
      commands: new Map([
        ['Escalate', { name: 'Escalate', operationId: 'escalate', entity: 'Ticket', handler: async () => ({}) }],
      ]),
      commandRuntime: {} as WorkflowRuntime['commandRuntime'],
      notify: async () => undefined,
      plugins: {
        echo: {
          say: async (params) => {
            log.push(`echo ${JSON.stringify(params)}`);
            return params;
          },
        },
      },
      blockPrivateTargets: true,
      services: new Map(),
      serviceImplementations: {},
    };
  });

  after(async () => {
    await sqlite.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  beforeEach(() => (log.length = 0));

  const workflow = (transactional: boolean, steps: StepSpec[]): WorkflowSpec => ({
    name: 'Engine',
    transactional,
    retries: 1,
    maxConcurrent: 1,
    steps,
  });
  const run = (spec: WorkflowSpec) =>
    runWorkflow(rt, spec, { id: 'job1', workflow: spec.name, actor: ACTOR, data: { payload: {} }, attempts: 1 });

  const loop: StepSpec = {
    type: 'loop',
    items: [1, 2],
    assignTo: 'all',
    do: [
      { type: 'condition', if: { 'variables.index': 1 }, then: [{ type: 'delay', duration: 1 }] },
      { type: 'plugin', plugin: 'echo', action_name: 'say', params: { n: '{{ variables.item }}' }, assignTo: 'x' },
    ],
  };

  it("runs a transactional loop's outside steps after the commit, each result in its slot", async () => {
    const result = await run(workflow(true, [loop]));
    expect(log).to.deep.equal(['commit', 'echo {"n":1}', 'echo {"n":2}']);
    // The condition's result is none (null); a body step's assignTo stays in its iteration.
    expect(result).to.deep.equal({ all: [null, { n: 1 }, null, { n: 2 }] });
  });

  it('gives the same loop run alone the same result, with no transaction around it', async () => {
    const result = await run(workflow(false, [loop]));
    expect(log).to.deep.equal(['echo {"n":1}', 'echo {"n":2}']);
    expect(result).to.deep.equal({ all: [null, { n: 1 }, null, { n: 2 }] });
  });

  it('refuses a command with a handler in a transactional workflow, before anything commits or is sent', async () => {
    const steps: StepSpec[] = [
      { type: 'plugin', plugin: 'echo', action_name: 'say', params: { n: 0 } },
      { type: 'command', command: 'Escalate', recordId: 't1' },
    ];
    const err = await run(workflow(true, steps)).then(
      () => expect.fail('the workflow ran'),
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(AppError);
    expect(err).to.include({ code: 'WORKFLOW_STEP_NOT_SUPPORTED' });
    expect((err as AppError).message).to.equal('Escalate has a handler: it cannot join a transaction');
    expect(log).to.deep.equal([]);
  });
});
