// The paths of webhook triggers: POST <route> stores a job of its workflow and answers 202
// (runtime/http/webhook-routes.ts). The signature scheme is described in words: OpenAPI has no
// security scheme for an HMAC of the body.

import type { Blueprint, Workflow } from '../../model/types.ts';
import { errorResponse, json, ref, TRACE_HEADER, type Schema } from './common.ts';

// Each a line of openapi.json of its own: short enough to read there.
const SIGNED = 'The caller proves it knows the secret (x-webhook-auth); the steps run as the app itself.';
const OPEN = 'Anyone may call it (no webhookSecretEnv); its steps run as an anonymous caller.';
const proof = (secretEnv: string): Schema => ({
  secretEnv,
  bearer: 'Authorization: Bearer <secret>',
  timestamp: 'X-Webhook-Timestamp: <unix seconds>, within 5 minutes of the server clock',
  signature: 'X-Webhook-Signature: sha256=<hex HMAC-SHA256 with the secret of "<timestamp>.<raw body>">',
  replay: 'A signed delivery is accepted once: 409 WEBHOOK_REPLAYED after',
});

export function webhookPaths(bp: Blueprint): Record<string, Schema> {
  const paths: Record<string, Schema> = {};
  for (const workflow of bp.workflows) {
    if (workflow.trigger.kind === 'webhook') paths[workflow.trigger.route] = { post: operation(workflow) };
  }
  return paths;
}

function operation(workflow: Workflow): Schema {
  const secretEnv = workflow.trigger.kind === 'webhook' ? workflow.trigger.secretEnv : undefined;
  const conflict = (codes: string[], description: string) => ({
    description,
    'x-error-codes': codes,
    headers: TRACE_HEADER,
    content: json(ref('Error')),
  });
  return {
    operationId: `${workflow.name}_webhook`,
    tags: ['Webhooks'],
    summary: workflow.description ?? `Starts workflow ${workflow.name}`,
    description: secretEnv ? SIGNED : OPEN,
    'x-workflow': workflow.name,
    ...(secretEnv ? { 'x-webhook-auth': proof(secretEnv) } : {}),
    security: [],
    requestBody: {
      required: false,
      description: 'The delivery, read by the steps as webhook.body',
      content: {
        'application/json': { schema: {} },
        'application/x-www-form-urlencoded': { schema: { type: 'object' } },
        'text/plain': { schema: { type: 'string' } },
      },
    },
    responses: {
      '202': {
        description: 'The job, pending (nobody can poll it: no credential owns it)',
        headers: TRACE_HEADER,
        content: json({
          type: 'object',
          properties: {
            success: { type: 'boolean' },
            job: {
              type: 'object',
              properties: {
                id: { type: 'string' },
                workflow: { type: 'string' },
                status: { type: 'string', enum: ['pending'] },
              },
              required: ['id', 'workflow', 'status'],
            },
          },
          required: ['success', 'job'],
        }),
      },
      '400': errorResponse('BadRequest'),
      ...(secretEnv ? { '401': errorResponse('Unauthenticated') } : {}),
      '409': conflict(
        secretEnv ? ['WORKFLOW_PRECONDITION_FAILED', 'WEBHOOK_REPLAYED'] : ['WORKFLOW_PRECONDITION_FAILED'],
        secretEnv
          ? 'The precondition does not hold, or the signed delivery was already received'
          : 'The precondition does not hold',
      ),
      '413': errorResponse('PayloadTooLarge'),
      '415': errorResponse('UnsupportedMediaType'),
      '503': errorResponse('ServiceUnavailable'),
    },
  };
}
