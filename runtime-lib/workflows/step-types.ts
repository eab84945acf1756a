// What each workflow step type does, written once: the engine (engine.ts) runs a workflow's steps
// in one of two ways, in the workflow's transaction or each committing on its own, and both read
// this table. A step type is one of three kinds, and the kind is all the two ways need to know:
// a database step is a unit of work (it joins the transaction, or commits alone); an outside step
// acts beyond the database (in a transactional workflow it runs after the commit); a flow step
// (condition, loop) picks which steps run next, where it stands.

import type { Actor } from '../core/actor.ts';
import type { Work } from '../data/database.ts';
import type { RequestContext } from '../data/entity-store.ts';
import type { StepSpec, WorkflowRuntime, WorkflowSpec } from './engine.ts';
import { commandStep, queryStep } from './database-steps.ts';
import { conditionStep, loopStep } from './flow-steps.ts';
import { delayStep, emailStep, notifyStep, pluginStep, serviceStep, webhookStep } from './outside-steps.ts';

/** What a step runs with: the app, the workflow and job it runs for, as whom, and what stops it. */
export interface StepEnv {
  rt: WorkflowRuntime;
  workflow: WorkflowSpec;
  job: { id: string; actor: Actor };
  ctx: RequestContext;
  signal?: AbortSignal;
}

/** Where steps read templates and store results: the run, or one iteration of a loop. */
export interface Scope {
  context: Record<string, unknown>;
  assign(step: StepSpec, value: unknown): void;
}

/** A step at its place (`steps.2`, `steps.1[3].do.0`), with its scope and where its result goes. */
export interface PlacedStep {
  step: StepSpec;
  at: string;
  scope: Scope;
  settle(value: unknown): void;
}

/**
 * A database step's work: a unit of work, which joins the workflow's transaction or commits on its
 * own; or, for a step that commits on its own whatever the workflow (a command with a handler), a
 * promise, and what it is, for the refusal a transactional workflow gives it.
 */
export type DatabaseWork = { work: () => Work<unknown> } | { commitsAlone: () => Promise<unknown>; what: string };

/** The steps a flow step runs where it stands, in order, and its own result (filled as they settle). */
export interface Flow {
  steps: readonly PlacedStep[];
  value: unknown;
}

export type StepType = {
  /** Whether the step's success changes something: a job is not run again past one that did. */
  takesEffect(step: StepSpec): boolean;
} & (
  | { kind: 'database'; prepare(env: StepEnv, step: StepSpec, context: Record<string, unknown>): DatabaseWork }
  | {
      kind: 'outside';
      act(env: StepEnv, step: StepSpec, at: string, context: Record<string, unknown>): Promise<unknown>;
    }
  | { kind: 'flow'; expand(step: StepSpec, at: string, scope: Scope): Flow }
);

const always = () => true;
const never = () => false;

/** Every step type the engine runs, by the `type` a step names. */
const STEP_TYPES: Readonly<Record<string, StepType>> = {
  // A find changes nothing.
  query: { kind: 'database', prepare: queryStep, takesEffect: (step) => step.action !== 'find' },
  command: { kind: 'database', prepare: commandStep, takesEffect: always },
  notify: { kind: 'outside', act: notifyStep, takesEffect: always },
  email: { kind: 'outside', act: emailStep, takesEffect: always },
  webhook: { kind: 'outside', act: webhookStep, takesEffect: always },
  plugin: { kind: 'outside', act: pluginStep, takesEffect: always },
  service: { kind: 'outside', act: serviceStep, takesEffect: always },
  // A delay must not hold the transaction open: it waits after the commit, as outside steps do.
  delay: { kind: 'outside', act: delayStep, takesEffect: never },
  // A flow step takes no effect itself; the steps it runs say whether they do.
  condition: { kind: 'flow', expand: conditionStep, takesEffect: never },
  loop: { kind: 'flow', expand: loopStep, takesEffect: never },
};

/** The type of `step`, or undefined when this version of the app has no such type. */
export function stepType(step: StepSpec): StepType | undefined {
  return Object.hasOwn(STEP_TYPES, step.type) ? STEP_TYPES[step.type] : undefined;
}
