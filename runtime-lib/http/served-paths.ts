// The methods each path of openapi.json is served with, so that a request whose path the app
// serves with other methods is answered 405 with Allow (http/respond.ts routeNotFound), not 404:
// the document describes every route, so it is the table, with the pages the app serves besides
// (the index at `/`).

/** The methods the app serves at a path; undefined when it serves none there. */
export type AllowedMethods = (path: string) => readonly string[] | undefined;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/**
 * From the `paths` of openapi.json: each template (`/api/tickets/{id}`) matches its own segments,
 * a `{parameter}` any one non-empty segment, with or without a trailing slash (as Express takes
 * them). HEAD goes with GET, as Express answers it. Each of `pages` is served with GET (and HEAD),
 * each of `forms` (the blueprint's pages, which take their actions' POSTs) with GET and POST.
 */
export function allowedMethods(
  doc: { paths?: Record<string, Record<string, unknown>> },
  pages: readonly string[] = [],
  forms: readonly string[] = [],
): AllowedMethods {
  const served = [
    ...Object.entries(doc.paths ?? {}),
    ...pages.map((page) => [page, { get: {} }] as const),
    ...forms.map((page) => [page, { get: {}, post: {} }] as const),
  ];
  const table = served.map(([template, item]) => {
    const methods = METHODS.filter((m) => Object.hasOwn(item, m)).map((m) => m.toUpperCase());
    if (methods.includes('GET') && !methods.includes('HEAD')) methods.splice(methods.indexOf('GET') + 1, 0, 'HEAD');
    const segments = template.split('/').map((s) => (/^\{[^}]+\}$/.test(s) ? '[^/]+' : escapeRegExp(s)));
    return { pattern: new RegExp(`^${segments.join('/')}/?$`), methods };
  });
  return (path) => {
    const found = table.filter((t) => t.pattern.test(path)).flatMap((t) => t.methods);
    return found.length ? [...new Set(found)] : undefined;
  };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
