// Yours to edit: bp created this file once and never changes, replaces or deletes it.
// The extension point of Helpdesk: what your team adds to the generated app without editing a generated file. One
// default export, checked when the app starts (the contract: src/runtime/http/extension.ts):
//
//   middleware  run for every request, the generated entity and command routes included, in order, after
//               the trace starts and BEFORE credentials are checked: req.actor is not known yet (read it
//               in a res.on('finish') listener) and the body is not read yet. Node's request and
//               response, not Express's. next() goes on, next(err) answers with the error envelope;
//               answering yourself (a CORS preflight) skips everything after, credentials included.
//   routes      your routes on an Express router, served after the generated ones, behind the whole
//               pipeline (req.actor is known). No access rule of the blueprint applies: check req.actor.
//   services    handed to every command handler as ctx.services; also where the operations of the
//               blueprint's [service.*] sections live, for workflow service steps:
//               { billing: { charge: async (input, { workflow, jobId }) => result } }. The input and the
//               result are checked against the types the blueprint declares; a step whose operation is
//               not here fails its job.
//   delegate    for an authenticated actor, the id of the person it acts for, from something your code
//               verified (never a header taken as is); it becomes actor.delegatedBy in audit records.
//   notifications  senders of [notifications] adapters whose type is not built in (console, email and slack are),
//               by adapter name: (message, config) => Promise<void>; one here wins over a built-in type. A notify
//               step through an adapter that has neither fails its job.
//   plugins     the actions of plugin workflow steps, by the step's plugin and action_name:
//               { crm: { upsert: async (params, ctx) => result } }. params: the step's params, templates
//               resolved; ctx: { workflow, jobId, actor, context }. The result (JSON) is the step's assignTo
//               value. An enabled [[plugins]] package's workflows are actions too; one here wins over them.
//               A plugin step whose action comes from neither fails its job.
//
// To try the examples, delete the four lines that open and close them (/* example, example */): they add
// CORS for one origin, a GET /api/me route, a mailer service and delegation your approval service signs.

import { defineExtension } from './runtime/http/extension.ts';

export default defineExtension({
  /* example
  middleware: [allowOrigins(['https://app.example.com'])],
  routes(router) {
    router.get('/api/me', (req, res) => {
      if (req.actor.kind === 'anonymous') throw new AppError('UNAUTHENTICATED', 'sign in or send an API key');
      res.json({ kind: req.actor.kind, id: req.actor.id, roles: req.actor.roles });
    });
  },
  services: { mailer: { send: async (to: string, text: string) => console.log(`mail to ${to}: ${text}`) } },
  delegate: approvedBy(process.env.APPROVAL_SECRET),
  example */
});

/* example
import { createHmac, timingSafeEqual } from 'node:crypto';
import { AppError } from './runtime/core/errors.ts';
import type { Extension } from './runtime/http/extension.ts';
import type { Middleware } from './runtime/http/request.ts';

// CORS for browser apps served from `origins`: preflights are answered here, before credentials.
function allowOrigins(origins: readonly string[]): Middleware {
  return (req, res, next) => {
    const origin = req.headers.origin;
    if (origin === undefined || !origins.includes(origin)) return next();
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Vary', 'Origin');
    if (req.method !== 'OPTIONS') return next();
    res.setHeader('Access-Control-Allow-Methods', 'GET, POST, PUT, DELETE');
    res.setHeader('Access-Control-Allow-Headers', 'Authorization, Content-Type, Idempotency-Key, X-CSRF-Token');
    res.setHeader('Access-Control-Max-Age', '600');
    res.statusCode = 204;
    res.end();
  };
}

// Delegation your approval service vouches for: it signs "<person id>:<agent id>" with APPROVAL_SECRET
// (HMAC-SHA256, hex) and the agent sends `X-Approved-By: <person id>:<signature>`. Anything else: the
// agent acts for itself.
function approvedBy(secret: string | undefined): Extension['delegate'] {
  return (req, actor) => {
    const header = req.headers['x-approved-by'];
    if (!secret || typeof header !== 'string' || actor.kind !== 'agent') return undefined;
    const [person, signature = ''] = header.split(':');
    const expected = createHmac('sha256', secret).update(`${person}:${actor.id}`).digest();
    const given = Buffer.from(signature, 'hex');
    return person && given.length === expected.length && timingSafeEqual(given, expected) ? person : undefined;
  };
}
example */
