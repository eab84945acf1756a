// One request of each operation, checked before the load: every server must do the real work and
// answer with the generated app's statuses and response shapes, or its numbers mean nothing.

/** Idempotency keys unique within the run: two instances on one database must not replay each other's checks. */
let checkWrites = 0;

/**
 * Checks get, list, create, update (and StartTicket, with `command`) and three refusals on the
 * server at `url`. Returns the id of the ticket the check created.
 */
export async function checkResponses(
  url: string,
  apiKey: string,
  id: string,
  fields: string[],
  command: boolean,
): Promise<string> {
  const problems: string[] = [];
  const expectFields = (what: string, body: unknown) => {
    const keys = Object.keys(body ?? {})
      .sort()
      .join(',');
    if (keys !== fields.join(',')) problems.push(`${what}: fields ${keys}, expected ${fields.join(',')}`);
  };
  const call = async (
    what: string,
    status: number,
    path: string,
    init: { method?: string; body?: string; anonymous?: true } = {},
  ) => {
    const headers: Record<string, string> = init.anonymous ? {} : { authorization: `Bearer ${apiKey}` };
    if (init.body)
      Object.assign(headers, {
        'content-type': 'application/json',
        'idempotency-key': `bench-check-${process.pid}-${++checkWrites}`,
      });
    const res = await fetch(`${url}${path}`, { method: init.method, body: init.body, headers });
    const text = await res.text();
    if (res.status !== status)
      problems.push(`${what}: status ${res.status}, expected ${status} (${text.slice(0, 300)})`);
    try {
      return JSON.parse(text) as Record<string, unknown>;
    } catch {
      problems.push(`${what}: the body is not JSON (${text.slice(0, 300)})`);
      return {};
    }
  };
  const got = await call('get by id', 200, `/api/tickets/${id}`);
  expectFields('get by id', got);
  if (got.id !== id) problems.push(`get by id: returned id ${String(got.id)}`);
  const page = await call('list', 200, '/api/tickets?limit=100&offset=50');
  const items = page.items as unknown[] | undefined;
  if (items?.length !== 100 || page.limit !== 100 || page.offset !== 50 || page.hasMore !== true) {
    problems.push(
      'list: expected 100 items, limit 100, offset 50, hasMore true ' +
        `(got ${items?.length} items, ${page.limit}, ${page.offset}, ${page.hasMore})`,
    );
  } else {
    expectFields('list item', items[0]);
  }
  const created = await call('create', 201, '/api/tickets', {
    method: 'POST',
    body: JSON.stringify({ title: 'Check', priority: 'high' }),
  });
  expectFields('create', created);
  if (created.title !== 'Check' || created.status !== 'open' || typeof created.createdAt !== 'string') {
    problems.push(`create: unexpected record ${JSON.stringify(created)}`);
  }
  const updated = await call('update', 200, `/api/tickets/${id}`, {
    method: 'PUT',
    body: JSON.stringify({ title: 'Checked', priority: 'low' }),
  });
  if (updated.title !== 'Checked' || updated.priority !== 'low' || updated.body !== got.body)
    problems.push(`update: unexpected record ${JSON.stringify(updated)}`);
  if (command && typeof created.id === 'string') {
    const started = await call('command', 200, `/api/commands/start_ticket/${created.id}`, {
      method: 'POST',
      body: '{}',
    });
    expectFields('command', started);
    if (started.id !== created.id || started.status !== 'in_progress')
      problems.push(`command: unexpected record ${JSON.stringify(started)}`);
  }
  await call('get without the API key', 401, `/api/tickets/${id}`, { anonymous: true });
  await call('get a missing id', 404, '/api/tickets/01ARZ3NDEKTSV4RRFFQ69G5FAV');
  await call('create without a title', 400, '/api/tickets', {
    method: 'POST',
    body: JSON.stringify({ priority: 'high' }),
  });
  if (problems.length) throw new Error(`wrong responses:\n  ${problems.join('\n  ')}`);
  return String(created.id);
}
