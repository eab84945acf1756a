// Who the people are, as the sign-in routes see them: the built-in table of the email provider
// (users.ts), or the records of the blueprint's `User` entity (user-records.ts). Either way the
// routes look a person up by e-mail, turn a session's user id into an actor, and sign people up.

import type { Actor } from '../../core/actor.ts';
import { AppError } from '../../core/errors.ts';
import { ulid } from '../../core/ids.ts';
import type { Database } from '../../data/database.ts';
import type { FieldSpec } from '../../data/fields.ts';
import type { ActiveTrace } from '../../observe/tracing.ts';
import { type EmailAddress, insertUser, userActor, userByEmail, userById } from './users.ts';

/** What sign-in needs of a person: whose password hash to verify. */
export interface Login {
  id: string;
  passwordHash: string;
}

export interface People {
  /** Fields sign-up takes besides e-mail and password (the User record's), for the sign-up form. */
  readonly signupFields: readonly FieldSpec[];
  /** The person who signs in with this e-mail, if they have a password. */
  login(trace: ActiveTrace | undefined, address: EmailAddress): Promise<Login | undefined>;
  /** The actor of a session's person: undefined once they can no longer sign in (removed). */
  actor(trace: ActiveTrace | undefined, id: string): Promise<Actor | undefined>;
  /** Whether sign-up must refuse this e-mail because someone has it. */
  emailTaken(trace: ActiveTrace | undefined, address: EmailAddress): Promise<boolean>;
  /**
   * Creates a person who signed up, in one transaction, and returns their actor. `fields` is the
   * rest of the sign-up body; throws EMAIL_TAKEN when the e-mail was taken meanwhile.
   */
  signUp(trace: ActiveTrace | undefined, email: string, fields: Record<string, unknown>, hash: string): Promise<Actor>;
}

export function emailTaken(): AppError {
  return new AppError('EMAIL_TAKEN', 'an account with this e-mail already exists; sign in instead');
}

/** People of the built-in table: sign-up takes an e-mail and a password, and ignores anything else. */
export function builtInPeople(db: Database): People {
  return {
    signupFields: [],
    // The table holds addresses normalized, and finds them by equality.
    async login(trace, address) {
      const row = await db.read(userByEmail(address.normalized), trace);
      return row && { id: row.id, passwordHash: row.passwordHash };
    },
    async actor(trace, id) {
      const row = await db.read(userById(id), trace);
      return row ? userActor(row) : undefined;
    },
    emailTaken: async (trace, address) => (await db.read(userByEmail(address.normalized), trace)) !== undefined,
    async signUp(trace, email, _fields, hash) {
      const id = ulid();
      try {
        await db.write(() => insertUser(id, email, hash), trace);
      } catch (err) {
        // Another sign-up with the same e-mail won the race while this one was hashing.
        if (err instanceof AppError && err.code === 'UNIQUE_CONFLICT') throw emailTaken();
        throw err;
      }
      return userActor({ id, email, roles: '[]' });
    },
  };
}
