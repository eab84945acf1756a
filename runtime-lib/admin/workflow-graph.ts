// GET /workflows/visualization on the admin server: the blueprint's workflows drawn as HTML, one lane
// each, from what starts it through its steps in order to what each step touches (entities,
// commands, adapters, addresses, plugins, services). Condition and loop steps draw their branches
// as nested lanes. Server-rendered with inline CSS, no script: it is read by a person, once.

import type { StepSpec, WorkflowSpec, WorkflowTrigger } from '../workflows/engine.ts';
import { html, type Html, trusted } from '../pages/html.ts';

/** What a step reaches, shown under it: the kind of target and its name. */
interface Target {
  kind: 'entity' | 'command' | 'adapter' | 'address' | 'plugin' | 'service' | 'wait';
  name: string;
}

const STYLE = `
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f4f5f7;color:#1f2328}
header{padding:.75rem 1.5rem;background:#24292f;color:#fff}
header h1{margin:0;font-size:1.15rem}
main{padding:1rem 1.5rem}
.legend{display:flex;flex-wrap:wrap;gap:.5rem 1rem;margin:0 0 1rem;font-size:.85rem;color:#57606a}
.legend span::before{content:"";display:inline-block;width:.8rem;height:.8rem;margin-right:.3rem;
  border-radius:.2rem;vertical-align:-.1rem;background:var(--c)}
section{background:#fff;border:1px solid #d0d7de;border-radius:.5rem;padding:.75rem 1rem;margin:0 0 1rem}
section h2{margin:0;font-size:1.05rem}
section p{margin:.15rem 0 .6rem;color:#57606a;font-size:.9rem}
.lane{display:flex;align-items:flex-start;flex-wrap:wrap;gap:.35rem 0}
.node{min-width:9rem;max-width:17rem;border:1px solid #d0d7de;border-left:.3rem solid var(--c);
  border-radius:.35rem;padding:.35rem .6rem;background:#fff}
.node b{display:block;font-size:.8rem;text-transform:uppercase;letter-spacing:.03em;color:var(--c)}
.node .what{display:block;overflow-wrap:anywhere}
.node ul{margin:.3rem 0 0;padding:0;list-style:none;font-size:.85rem}
.node li{overflow-wrap:anywhere}
.node li i{font-style:normal;color:#57606a}
.arrow{padding:.45rem .4rem 0;color:#57606a;font-size:1.2rem}
.branches{display:flex;flex-direction:column;gap:.4rem;margin-top:.4rem}
.branch{display:flex;align-items:flex-start;gap:.4rem;padding:.35rem;border:1px dashed #d0d7de;border-radius:.35rem}
.branch>em{font-style:normal;font-size:.8rem;color:#57606a;padding-top:.5rem}
.trigger{--c:#8250df}.database{--c:#0969da}.outside{--c:#bc4c00}.flow{--c:#57606a}
.none{color:#57606a}
`;

/** The whole HTML document of the workflows of an app called `appTitle`. */
export function workflowGraphPage(workflows: readonly WorkflowSpec[], appTitle: string): string {
  const body = workflows.length
    ? [...workflows].sort((a, b) => a.name.localeCompare(b.name)).map(workflowSection)
    : html`<p class="none">This app has no workflows.</p>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Workflows · ${appTitle}</title>
<style>${trusted(STYLE)}</style>
</head>
<body>
<header><h1>Workflows of ${appTitle}</h1></header>
<main>
<p class="legend"><span class="trigger">trigger</span><span class="database">database step (in the job's \
transaction when transactional)</span><span class="outside">step that reaches outside</span>\
<span class="flow">condition, loop, delay</span></p>
${body}
</main>
</body>
</html>
`.text;
}

function workflowSection(workflow: WorkflowSpec): Html {
  const facts = [
    workflow.transactional ? 'transactional' : 'each step alone',
    `${workflow.retries} ${workflow.retries === 1 ? 'run' : 'runs'} at most`,
    `${workflow.maxConcurrent} at once`,
  ];
  const precondition = workflow.precondition ? conditionText(workflow.precondition) : '';
  return html`<section id="${`workflow-${workflow.name}`}">
<h2>${workflow.name}</h2>
<p>${workflow.description ? `${workflow.description} · ` : ''}${facts.join(' · ')}</p>
<div class="lane">${triggerNode(workflow.trigger, precondition)}${stepLane(workflow.steps)}</div>
</section>
`;
}

function triggerNode(trigger: WorkflowTrigger | undefined, precondition: string): Html {
  const [what, detail] = triggerText(trigger);
  return html`<div class="node trigger"><b>trigger</b><span class="what">${what}</span>\
${
  detail || precondition
    ? html`<ul>${detail ? html`<li>${detail}</li>` : ''}\
${precondition ? html`<li><i>requires</i> ${precondition}</li>` : ''}</ul>`
    : ''
}</div>`;
}

function triggerText(trigger: WorkflowTrigger | undefined): [string, string] {
  switch (trigger?.kind) {
    case 'entity': {
      const when = Object.keys(trigger.condition).length ? `when ${conditionText(trigger.condition)}` : '';
      return [`${trigger.entity} ${trigger.event}d`, when];
    }
    case 'webhook':
      return [`POST ${trigger.route}`, trigger.secretEnv ? `secret in ${trigger.secretEnv}` : 'no secret'];
    case 'schedule':
      return [`schedule ${trigger.cron}`, 'UTC'];
    default:
      return ['started by hand', 'a skill action or a page'];
  }
}

/** The steps in order, an arrow before each. */
function stepLane(steps: readonly StepSpec[]): Html[] {
  return steps.map((step) => html`<span class="arrow" aria-hidden="true">→</span>${stepNode(step)}`);
}

function stepNode(step: StepSpec): Html {
  const kind = STEP_KIND[step.type] ?? 'outside';
  const targets = stepTargets(step);
  const list = targets.length ? html`<ul>${targets.map((t) => html`<li><i>${t.kind}</i> ${t.name}</li>`)}</ul>` : '';
  return html`<div class="node ${kind}"><b>${step.type}</b><span class="what">${stepTitle(step)}</span>\
${list}${branches(step)}</div>`;
}

const STEP_KIND: Readonly<Record<string, string>> = {
  query: 'database',
  command: 'database',
  condition: 'flow',
  loop: 'flow',
  delay: 'flow',
};

function stepTitle(step: StepSpec): string {
  const name = typeof step.name === 'string' ? step.name : '';
  if (step.type === 'query') return [text(step.action), name].filter(Boolean).join(' · ');
  if (step.type === 'condition') return `if ${formatValue(step.if)}`;
  if (step.type === 'loop') return `for each of ${formatValue(step.items)}`;
  return name;
}

function stepTargets(step: StepSpec): Target[] {
  switch (step.type) {
    case 'query':
      return present({ kind: 'entity', name: text(step.entity) });
    case 'command':
      return present({ kind: 'command', name: text(step.command) });
    case 'notify':
      return present({ kind: 'adapter', name: text(step.adapter) || 'the default adapter' });
    case 'email':
      return present({ kind: 'adapter', name: text(step.adapter) || 'the e-mail adapter' });
    case 'webhook':
      return present({ kind: 'address', name: `${text(step.method) || 'POST'} ${text(step.url)}` });
    case 'plugin':
      return present({ kind: 'plugin', name: `${text(step.plugin)}.${text(step.action_name)}` });
    case 'service':
      return present({ kind: 'service', name: [text(step.service), text(step.operation)].filter(Boolean).join('.') });
    case 'delay':
      return present({ kind: 'wait', name: text(step.duration) });
    default:
      return [];
  }
}

function present(target: Target): Target[] {
  return target.name ? [target] : [];
}

/** A condition's then and else, a loop's do: each a lane of its own inside the step. */
function branches(step: StepSpec): Html | '' {
  const keys = step.type === 'condition' ? ['then', 'else'] : step.type === 'loop' ? ['do'] : [];
  const lanes = keys
    .filter((key) => Array.isArray(step[key]) && (step[key] as unknown[]).length > 0)
    .map(
      (key) =>
        html`<div class="branch"><em>${key}</em><div class="lane">${stepLane(step[key] as StepSpec[])}</div></div>`,
    );
  return lanes.length ? html`<div class="branches">${lanes}</div>` : '';
}

function conditionText(condition: Readonly<Record<string, unknown>>): string {
  return Object.keys(condition)
    .sort()
    .map((path) => `${path} = ${formatValue(condition[path])}`)
    .join(', ');
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function formatValue(value: unknown): string {
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
}
