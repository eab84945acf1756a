// Workflow conditions read values alike wherever they stand: a precondition, an entity trigger's
// condition and a condition step's `if` take a value, a list of values (any of them) or a table of
// operators ({ "$ne" = "" }, as in Zebric 0.6 blueprints). A table without $ keys is a value.

import { expect } from 'chai';
import { checkPrecondition, conditionHolds, runContext, type WorkflowSpec } from '../runtime-lib/workflows/engine.ts';
import { ifHolds } from '../runtime-lib/workflows/step-condition.ts';

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
    expect(conditionHolds({ 'before.status': ['open', 'in_progress'], 'after.priority': { $gt: 2 } }, data)).to.equal(true);
    expect(conditionHolds({ 'after.priority': { $gt: 3 } }, data)).to.equal(false);
  });

  it('compares a table without $ keys as a value, in preconditions and in a condition step alike', () => {
    const record = { meta: { kind: 'x' } };
    expect(refusal({ 'variables.data.record.meta': { kind: 'x' } }, record)).to.equal(undefined);
    expect(refusal({ 'variables.data.record.meta': { kind: 'y' } }, record)).to.equal('WORKFLOW_PRECONDITION_FAILED');
    expect(ifHolds({ 'variables.data.record.meta': { kind: 'x' } }, runContext({ record }))).to.equal(true);
  });
});
