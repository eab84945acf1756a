// An app whose blueprint has no [auth] signs nobody in: an entity without access rules is public
// there (as in Zebric 0.6). The app says so when it starts, one line per entity, and loudly in
// production, where that is rarely what anyone meant.

/** An entity anonymous callers may act on, and how (the generator's PUBLIC_ENTITY list). */
export interface PublicEntity {
  entity: string;
  collection: string;
  actions: readonly ('read' | 'create' | 'update' | 'delete')[];
}

export interface Announce {
  production: boolean;
  /** Development: the app's warning channel (`warning: ` is its prefix). */
  warn(message: string): void;
  /** Production: stderr, not muted with the warnings. */
  alert(message: string): void;
}

export function announcePublicEntities(entities: readonly PublicEntity[], announce: Announce): void {
  for (const { entity, collection, actions } of entities) {
    const where = `${entity} (/api/${collection})`;
    if (!announce.production) {
      announce.warn(`public entity ${where}: anyone may ${actions.join(', ')} it (the blueprint has no [auth])`);
      continue;
    }
    const reads = actions.includes('read');
    const changes = actions.some((a) => a !== 'read');
    const what = reads && changes ? 'read and change' : reads ? 'read' : 'change';
    announce.alert(
      `WARNING: ${where} is public: anyone can ${what} it without signing in (${actions.join(', ')}); ` +
        'the blueprint has no [auth]',
    );
  }
}
