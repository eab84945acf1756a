// prisma/schema.prisma (SQLite) and prisma/postgres/schema.prisma (PostgreSQL): the data model in
// Prisma's language, the same models for both. The source of each provider's migrations (Prisma's
// engine diffs it) and of a Prisma Client for user code that wants one.

import * as path from 'node:path';
import { GENERATED_HEADER } from '../header.ts';
import { PRISMA_DIR, type PrismaProvider } from './prisma-providers.ts';
import { generatedIndexes } from '../model/indexes.ts';
import { refValueType } from '../model/keys.ts';
import type { Blueprint, Entity, Field } from '../model/types.ts';
import { EMAIL_INDEX_MARKER, emailKeyColumn } from './migrations/email-indexes.ts';
import { refRelations, type RefRelation } from '../model/relations.ts';
import { MAX_WIDTH, wrapText } from './ts-literal.ts';

/**
 * Prisma's types, the same for both providers; Prisma picks each database's column type (Float:
 * REAL in SQLite, DOUBLE PRECISION in PostgreSQL; DateTime: DATETIME, TIMESTAMP(3); Json: JSONB,
 * stored as text in SQLite). The runtime sees one form of every value either way: its PostgreSQL
 * driver reads values back as SQLite gives them (runtime-lib/data/database.ts).
 */
const SCALAR: Record<Field['type'], string> = {
  ULID: 'String',
  UUID: 'String',
  Text: 'String',
  LongText: 'String',
  Email: 'String',
  Integer: 'Int',
  Float: 'Float',
  Boolean: 'Boolean',
  // SQLite has no date-only type; a Date is stored as its YYYY-MM-DD text, which sorts correctly. The
  // same text in PostgreSQL, whose DATE would come back from the driver as a time of day in a zone.
  Date: 'String',
  DateTime: 'DateTime',
  JSON: 'Json',
  Enum: 'String',
  Ref: 'String',
  file: 'String',
};

/** A field's Prisma type: a Ref takes its target's (Int for an Integer key). */
function scalarOf(bp: Blueprint, field: Field): string {
  return SCALAR[field.type === 'Ref' ? refValueType(bp, field) : field.type];
}

export function emitPrismaSchema(bp: Blueprint, provider: PrismaProvider): string {
  const relations = refRelations(bp);
  const people = bp.auth.userRecords?.entity;
  const models = bp.entities.map((e) => emitModel(bp, e, relations, e.name === people ? [CREDENTIALS_RELATION] : []));
  return [
    `// ${GENERATED_HEADER}`,
    'generator client {',
    '  provider = "prisma-client"',
    // One Prisma Client folder, whichever schema it is generated from (the output is relative to it).
    `  output   = "${path.posix.relative(PRISMA_DIR[provider], 'src/generated/prisma')}"`,
    '}',
    '',
    'datasource db {',
    `  provider = "${provider}"`,
    '}',
    '',
    models.join('\n\n'),
    '',
    RUNTIME_MODELS,
    ...(bp.auth.providers.includes('email') ? ['', emailAuthModels(bp)] : []),
    '',
  ].join('\n');
}

/** A field or relation line: name, type and attributes, with a `///` note on its values. */
interface Row {
  name: string;
  type: string;
  attributes: string;
  note?: string;
  /** A line of its own above the field that later generations read back (email-indexes.ts). */
  marker?: string;
}

/** `extra`: relation fields of bp's own tables (the credentials of a User record). */
function emitModel(bp: Blueprint, entity: Entity, relations: RefRelation[], extra: readonly Row[] = []): string {
  const rows: Row[] = [];
  for (const field of entity.fields) {
    const attrs: string[] = [];
    if (field.primaryKey) attrs.push('@id');
    else if (field.unique) attrs.push('@unique');
    // INTEGER PRIMARY KEY AUTOINCREMENT in SQLite, SERIAL in PostgreSQL: ids are never reused, even
    // after a delete.
    const dflt = field.primaryKey && field.type === 'Integer' ? '@default(autoincrement())' : defaultAttribute(field);
    if (dflt) attrs.push(dflt);
    rows.push({
      name: field.name,
      type: `${scalarOf(bp, field)}${field.nullable ? '?' : ''}`,
      attributes: attrs.join(' '),
      note: field.type === 'Enum' ? `one of: ${field.values?.join(', ')}` : undefined,
      // A unique e-mail address is unique in any letter case: the migrations index lower(field).
      marker: field.type === 'Email' && field.unique && !field.primaryKey ? EMAIL_INDEX_MARKER : undefined,
    });
    const key = emailKeyColumn(field);
    if (key) {
      // The address as compared for uniqueness (migrations/email-indexes.ts emailKeyColumn).
      rows.push({ name: key.slice(1), type: 'String?', attributes: `@unique @map("${key}")` });
    }
    const forward = relations.find((r) => r.from === entity && r.field === field);
    if (forward) {
      rows.push({
        name: forward.forward,
        type: `${forward.to.name}${field.nullable ? '?' : ''}`,
        attributes: `@relation("${forward.name}", fields: [${field.name}], references: [${field.ref?.field}])`,
      });
    }
  }
  for (const back of relations.filter((r) => r.to === entity)) {
    const type = back.backIsOne ? `${back.from.name}?` : `${back.from.name}[]`;
    rows.push({ name: back.back, type, attributes: `@relation("${back.name}")` });
  }
  rows.push(...extra);
  const nameWidth = Math.max(...rows.map((r) => r.name.length));
  const typeWidth = Math.max(...rows.map((r) => r.type.length));
  const lines = rows.flatMap((r) => {
    const line = `  ${r.name.padEnd(nameWidth)} ${r.type.padEnd(typeWidth)} ${r.attributes}`;
    const marker = r.marker === undefined ? [] : [`  ${r.marker}`];
    if (r.note === undefined) return [...marker, line.trimEnd()];
    // The note follows the field when it fits on the line, else goes above it, wrapped.
    const note = docLines(r.note, 0);
    const trailing = `${line} ${note[0]}`;
    return note.length === 1 && trailing.length <= MAX_WIDTH
      ? [...marker, trailing]
      : [...marker, ...docLines(r.note, 2), line.trimEnd()];
  });
  const indexes = [
    ...entity.fields.filter((f) => f.index && !f.unique).map((f) => `  @@index([${f.name}])`),
    ...generatedIndexes(entity).map((i) => {
      const map = i.name === undefined ? '' : `, map: ${JSON.stringify(i.name)}`;
      return `  @@${i.unique ? 'unique' : 'index'}([${i.fields.join(', ')}]${map})`;
    }),
  ];
  const doc = entity.description
    ? docLines(entity.description, 0)
        .map((l) => `${l}\n`)
        .join('')
    : '';
  return `${doc}model ${entity.name} {\n${lines.join('\n')}${indexes.length ? `\n\n${indexes.join('\n')}` : ''}\n}`;
}

/**
 * Blueprint text as `///` documentation lines for a line indented by `indent`. Line breaks in
 * the text are collapsed (a value or description cannot end its comment and add schema lines).
 */
function docLines(text: string, indent: number): string[] {
  return wrapText(text, MAX_WIDTH - indent - 4).map((line) => `${' '.repeat(indent)}/// ${line}`);
}

function defaultAttribute(field: Field): string | undefined {
  const d = field.default;
  if (!d) return undefined;
  if (d.kind === 'now') return field.type === 'DateTime' ? '@default(now())' : undefined;
  const v = d.value;
  if (field.type === 'JSON') return undefined;
  if (typeof v === 'string') return `@default(${JSON.stringify(v)})`;
  if (typeof v === 'number' || typeof v === 'boolean') return `@default(${String(v)})`;
  return undefined;
}

/** The User record's side of its credentials (Prisma wants both sides of a relation). */
const CREDENTIALS_RELATION: Row = {
  name: 'bpCredentials',
  type: 'BpUser?',
  attributes: '@relation("BpUserCredentials")',
};

/**
 * Tables of the email provider (runtime-lib/auth/email); prefixed so they never clash with
 * entities. People live in BpUser, or, when they are the records of the blueprint's `User`
 * entity, BpUser keeps only their credentials, keyed by the record's id. Sessions name their
 * person by a foreign key: removing the person (or deleting the User record) ends them.
 */
function emailAuthModels(bp: Blueprint): string {
  const records = bp.auth.userRecords;
  const user = records && bp.entities.find((e) => e.name === records.entity);
  const key = user?.primaryKey;
  const credentialsOf =
    key && `@relation("BpUserCredentials", fields: [id], references: [${key.name}], onDelete: Cascade)`;
  const people = key
    ? `/// Credentials of the people who sign in: their ${user.name} record's id, the password hash and the roles
/// the users command gave (a JSON list). Managed by bp's runtime; deleting the ${user.name} deletes them.
model BpUser {
  id           ${SCALAR[key.type].padEnd(11)} @id
  passwordHash String
  roles        String      @default("[]")
  createdAt    DateTime
  user         ${user.name.padEnd(11)} ${credentialsOf}
  sessions     BpSession[]

  @@map("_bp_users")
}`
    : `/// People who sign in with e-mail and password. Managed by bp's runtime; roles is a JSON list.
model BpUser {
  id           String      @id
  email        String      @unique
  passwordHash String
  roles        String      @default("[]")
  createdAt    DateTime
  sessions     BpSession[]

  @@map("_bp_users")
}`;
  const userId = key ? SCALAR[key.type] : 'String';
  return `${people}

/// Sessions of signed-in people (express-session store); expiresAt is epoch milliseconds. A session ends
/// with its person's row (ON DELETE CASCADE).
model BpSession {
  sid       String  @id
  data      String
  expiresAt BigInt
  userId    ${userId}?
  user      BpUser? @relation(fields: [userId], references: [id], onDelete: Cascade)

  @@index([expiresAt])
  @@index([userId])
  @@map("_bp_sessions")
}

/// Failed sign-ins per e-mail ("email:...") and client address ("ip:..."), shared by every instance
/// (runtime/auth/email/signin-throttle.ts); lastAt is epoch milliseconds.
model BpSigninFailure {
  key    String @id
  count  Int
  lastAt BigInt

  @@index([lastAt])
  @@map("_bp_signin_failures")
}`;
}

/** Tables of the runtime itself: the audit trail, remembered idempotency keys, the readiness row. */
const RUNTIME_MODELS = `/// Audit trail of every command and entity write (runtime/data/audit.ts);
/// changes and detail are JSON.
model BpAudit {
  id             String  @id
  at             String
  operation      String
  entity         String
  recordId       String
  actorId        String
  credentialId   String?
  delegatedBy    String?
  agentRunId     String?
  idempotencyKey String?
  traceId        String?
  changes        String
  detail         String?

  @@index([entity, recordId, at])
  @@map("_bp_audit")
}

/// Idempotency keys, kept 24 hours (runtime/data/idempotency-store.ts); times are epoch milliseconds.
/// A running request's claim has an id and a lease it renews; both are cleared once it is done.
model BpIdempotency {
  scope          String
  operation      String
  key            String
  requestHash    String
  state          String
  status         Int?
  body           String?
  location       String?
  createdAt      BigInt
  expiresAt      BigInt
  claimId        String?
  leaseExpiresAt BigInt?

  @@id([scope, operation, key])
  @@index([expiresAt])
  @@map("_bp_idempotency")
}

/// Workflow jobs (runtime/workflows/jobs.ts); times are epoch milliseconds, data, actor, result and error JSON;
/// causeTraceId is the trace of the request that caused the job.
/// A running job's lease is renewed by the instance running it: a lapsed lease means that instance stopped.
model BpJob {
  id             String  @id
  workflow       String
  status         String
  owner          String
  actor          String
  data           String
  result         String?
  error          String?
  attempts       Int     @default(0)
  createdAt      BigInt
  startedAt      BigInt?
  finishedAt     BigInt?
  leaseExpiresAt BigInt?
  causeTraceId   String?

  @@index([status, workflow, createdAt])
  @@map("_bp_jobs")
}

/// Triggers that fire once across instances (runtime/workflows/fired-once.ts): a schedule's tick, a signed
/// webhook delivery. Kept until expiresAt (epoch milliseconds), while a duplicate could still arrive.
model BpTriggerFired {
  key       String @id
  expiresAt BigInt

  @@index([expiresAt])
  @@map("_bp_triggers_fired")
}

/// One row, rewritten by every readiness probe (GET /readyz, runtime/http/health.ts); checkedAt is epoch milliseconds.
model BpReady {
  id        String @id
  checkedAt BigInt

  @@map("_bp_ready")
}`;
