// The timeout of a webhook step's request (the issue names it): a target that never answers is
// given up on after the timeout, tried again under the same Idempotency-Key, and the step fails
// with a retryable WEBHOOK_STEP_FAILED. Run on deliverWebhook itself, with a short timeout, so the
// test does not wait the 10 s a job would.

import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { AppError } from '../runtime-lib/core/errors.ts';
import { deliverWebhook } from '../runtime-lib/workflows/webhook.ts';

describe('webhook step requests', () => {
  let server: http.Server;
  const keys: string[] = [];

  before(async () => {
    // Reads each request and never answers it.
    server = http.createServer((req) => {
      keys.push(String(req.headers['idempotency-key']));
      req.resume();
    });
    server.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('gives up on a target that does not answer within the timeout, and tries again under one key', async () => {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    const started = Date.now();
    let failure: AppError | undefined;
    try {
      await deliverWebhook(
        { url, method: 'POST', headers: {}, body: { ping: true }, idempotencyKey: 'job-1-steps.0' },
        { blockPrivate: false, timeoutMs: 200, backoffMs: [20] },
      );
    } catch (err) {
      failure = err as AppError;
    }
    expect(failure).to.include({ code: 'WEBHOOK_STEP_FAILED', retryable: true });
    expect(failure?.message).to.include('no answer within 0.2 s');
    expect(keys).to.deep.equal(['job-1-steps.0', 'job-1-steps.0']);
    expect(Date.now() - started).to.be.below(5_000);
  });
});
