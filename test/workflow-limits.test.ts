// The limits of control steps, run by the engine itself (no database step involved): a loop over
// more than 1,000 items, loops in loops past 10,000 steps, and a delay that the app stopping
// interrupts at once (JOB_INTERRUPTED, retryable: the job goes back to pending, unless a step
// before it took effect: running it again would repeat that step).

import { expect } from 'chai';
import { ANONYMOUS } from '../runtime-lib/core/actor.ts';
import { AppError } from '../runtime-lib/core/errors.ts';
import type { Database } from '../runtime-lib/data/database.ts';
import {
  runWorkflow,
  type StepSpec,
  type WorkflowRuntime,
  type WorkflowSpec,
} from '../runtime-lib/workflows/engine.ts';

const sent: string[] = [];
const rt: WorkflowRuntime = {
  db: {} as Database,
  stores: new Map(),
  commands: new Map(),
  commandRuntime: {} as WorkflowRuntime['commandRuntime'],
  notify: async (m) => void sent.push(m.body),
  defaultAdapter: 'log',
  plugins: {},
  blockPrivateTargets: true,
  services: new Map(),
  serviceImplementations: {},
};

function workflow(steps: StepSpec[]): WorkflowSpec {
  return { name: 'Limits', precondition: {}, transactional: false, retries: 1, maxConcurrent: 1, steps };
}

async function failure(steps: StepSpec[], signal?: AbortSignal): Promise<AppError> {
  const job = { id: 'job1', workflow: 'Limits', actor: ANONYMOUS, data: { payload: {} }, attempts: 1 };
  try {
    await runWorkflow(rt, workflow(steps), job, undefined, signal);
  } catch (err) {
    return err as AppError;
  }
  throw new Error('expected the job to fail');
}

describe('workflow step limits', () => {
  beforeEach(() => (sent.length = 0));

  it('refuses a loop over more than 1,000 items before running any of them', async () => {
    const items = Array.from({ length: 1001 }, (_, i) => i);
    const err = await failure([{ type: 'loop', items, do: [{ type: 'notify', body: '{{ variables.item }}' }] }]);
    expect(err).to.include({ code: 'WORKFLOW_LIMIT_EXCEEDED' });
    expect(err.message).to.include('at most 1000 items');
    expect(sent).to.deep.equal([]);
  });

  it('stops loops in loops past 10,000 steps in a job', async () => {
    const items = Array.from({ length: 1000 }, (_, i) => i);
    const inner = { type: 'loop', items, do: [{ type: 'notify', body: 'x' }] };
    const err = await failure([{ type: 'loop', items: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], do: [inner] }]);
    expect(err).to.include({ code: 'WORKFLOW_LIMIT_EXCEEDED' });
    expect(err.message).to.include('at most 10000 steps');
  });

  it('ends a delay at once when the app stops, with JOB_INTERRUPTED (retryable), before the next step', async () => {
    const stopping = new AbortController();
    const started = Date.now();
    setTimeout(() => stopping.abort(), 50);
    const err = await failure(
      [
        { type: 'delay', duration: 60_000 },
        { type: 'notify', body: 'after' },
      ],
      stopping.signal,
    );
    expect(err).to.include({ code: 'JOB_INTERRUPTED', retryable: true });
    expect(Date.now() - started).to.be.below(5_000);
    expect(sent).to.deep.equal([]);
  });

  it('does not offer to run a job again once one of its steps took effect: the failure is not retryable', async () => {
    const stopping = new AbortController();
    setTimeout(() => stopping.abort(), 50);
    const steps = [
      { type: 'notify', body: 'before' },
      { type: 'delay', duration: 60_000 },
      { type: 'notify', body: 'after' },
    ];
    const err = await failure(steps, stopping.signal);
    expect(err).to.include({ code: 'JOB_INTERRUPTED', retryable: false });
    expect(err.message).to.include('not run again');
    // Run again, the first notify would be sent twice.
    expect(sent).to.deep.equal(['before']);
  });

  it('keeps assignTo of a loop body in its iteration and gives the loop every result', async () => {
    const job = { id: 'job2', workflow: 'Limits', actor: ANONYMOUS, data: { payload: {} }, attempts: 1 };
    const result = await runWorkflow(
      rt,
      workflow([
        {
          type: 'loop',
          items: ['a', 'b'],
          assignTo: 'seen',
          do: [
            {
              type: 'condition',
              if: { 'variables.index': { $gt: 0 } },
              then: [{ type: 'notify', body: 'later {{ variables.item }}' }],
            },
            { type: 'notify', body: '{{ variables.index }}:{{ variables.item }}' },
          ],
        },
      ]),
      job,
    );
    expect(sent).to.deep.equal(['0:a', 'later b', '1:b']);
    expect(result).to.deep.equal({ seen: [null, null, null, null] });
  });
});
