// Workflow conditions read values alike wherever they stand: a precondition, an entity trigger's
// condition and a condition step's `if` take a value, a list of values (any of them) or a table of
// operators ({ "$ne" = "" }, as in Zebric 0.6 blueprints). A table without $ keys is a value.

import { expect } from 'chai';
import { checkPrecondition, conditionHolds, runContext, type WorkflowSpec } from '../runtime-lib/workflows/engine.ts';
import { ifHolds } from '../runtime-lib/workflows/step-condition.ts';
import { entityEventHook } from '../runtime-lib/workflows/entity-events.ts';

const spec = (precondition: Record<string, unknown>): WorkflowSpec => ({
  name: 'Close',
  precondition,
  transactional: false,
  retries: 1,
  maxConcurrent: 1,
  steps: [],
});
const refusal = (precondition: Record<string, unknown>, record: Record<string, unknown>): string | undefined => {
  try {
    checkPrecondition(spec(precondition), runContext({ record }));
    return undefined;
  } catch (err) {
    return (err as { code: string }).code;
  }
};

describe('workflow conditions', () => {
  it('reads operator tables in preconditions (Zebric 0.6), which used to be compared as literal tables', () => {
    const notClosed = { 'variables.data.record.status': { $ne: 'closed' } };
    expect(refusal(notClosed, { status: 'open' })).to.equal(undefined);
    expect(refusal(notClosed, { status: 'closed' })).to.equal('WORKFLOW_PRECONDITION_FAILED');
    const band = { 'variables.data.record.amount': { $gte: 10, $lt: 100 } };
    expect(refusal(band, { amount: 10 })).to.equal(undefined);
    expect(refusal(band, { amount: '99' })).to.equal(undefined);
    expect(refusal(band, { amount: 100 })).to.equal('WORKFLOW_PRECONDITION_FAILED');
    expect(refusal(band, {})).to.equal('WORKFLOW_PRECONDITION_FAILED');
  });

  it('reads them in entity trigger conditions too, and lists as any of their values', () => {
    const data = { before: { status: 'open' }, after: { status: 'resolved', priority: 3 } };
    expect(conditionHolds({ 'before.status': ['open', 'in_progress'], 'after.priority': { $gt: 2 } }, data)).to.equal(
      true,
    );
    expect(conditionHolds({ 'after.priority': { $gt: 3 } }, data)).to.equal(false);
  });

  it('compares a table without $ keys as a value, in preconditions and in a condition step alike', () => {
    const record = { meta: { kind: 'x' } };
    expect(refusal({ 'variables.data.record.meta': { kind: 'x' } }, record)).to.equal(undefined);
    expect(refusal({ 'variables.data.record.meta': { kind: 'y' } }, record)).to.equal('WORKFLOW_PRECONDITION_FAILED');
    expect(ifHolds({ 'variables.data.record.meta': { kind: 'x' } }, runContext({ record }))).to.equal(true);
  });

  // An update may skip the hook only when no trigger can hold (data/entity-store.ts, one statement):
  // whenever mayAct says so, no record the update could have changed makes a condition hold.
  it("an entity hook's mayAct is false only when no record the update could change starts a workflow", () => {
    const values = ['open', 'resolved', 3, '3', true, null];
    const expectations: unknown[] = [...values, ['open', 'resolved'], { $ne: 'open' }, { $gt: 2 }];
    const paths = ['before.status', 'after.status', 'before.priority', 'after.priority', 'entity', 'event'];
    let skipped = 0;
    let seed = 7;
    const pick = <T>(items: readonly T[]): T => items[(seed = (seed * 48271) % 2147483647) % items.length];
    for (let round = 0; round < 400; round++) {
      const condition: Record<string, unknown> = {};
      for (let n = 1 + (round % 3); n > 0; n--) {
        const path = pick(paths);
        condition[path] =
          path === 'entity'
            ? pick(['Ticket', 'Other'])
            : path === 'event'
              ? pick(['update', 'create'])
              : pick(expectations);
      }
      const set: Record<string, unknown> = round % 2 ? { status: pick(values) } : { title: 'renamed' };
      const hook = entityEventHook([
        { ...spec({}), trigger: { kind: 'entity', entity: 'Ticket', event: 'update', condition } },
      ]);
      if (hook?.mayAct?.('Ticket', set) !== false) continue;
      skipped++;
      for (const status of values)
        for (const priority of values) {
          const before = { status, priority, title: 'old' };
          const data = { entity: 'Ticket', event: 'update', before, after: { ...before, ...set } };
          expect(conditionHolds(condition, data), JSON.stringify({ condition, set, before })).to.equal(false);
        }
    }
    expect(skipped, 'conditions the hook may skip').to.be.greaterThan(50);
    const reference = { 'before.status': 'in_progress', 'after.status': 'resolved' };
    const hook = entityEventHook([
      { ...spec({}), trigger: { kind: 'entity', entity: 'Ticket', event: 'update', condition: reference } },
    ]);
    expect(hook?.mayAct?.('Ticket', { title: 'renamed' })).to.equal(false);
    expect(hook?.mayAct?.('Ticket', { status: 'in_progress' })).to.equal(false);
    expect(hook?.mayAct?.('Ticket', { status: 'resolved' })).to.equal(true);
  });
});
