// The `{param}` placeholders of a declared route (skill actions), shared by the runtime that
// serves the route and the generator that describes it: a pure function, importing nothing.

/** The `{param}` names of a declared path, in order. */
export function pathParams(path: string): string[] {
  return [...path.matchAll(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]);
}
