// Zebric keys at generate time (issue 9): what bp refuses, with exact diagnostics, in blueprints
// that use keys of every type, Refs with defaults, plain-field relations and entity indexes.
// Each fixture of test/fixtures/zebric/invalid-keys/ breaks these rules only.

import { expect } from 'chai';
import { diagnosticsOf } from './support/zebric.ts';

describe('Zebric keys: generate-time checks', () => {
  it('a Ref default or mutation literal must be an id its target can hold (INVALID_DEFAULT, INVALID_MUTATION)', () => {
    expect(diagnosticsOf('invalid-keys/ref-default-key-type')).to.deep.equal([
      'app.toml:14:52 error INVALID_DEFAULT entity.Card.fields.1.default: ' +
        'default "backlog" does not fit the Ref to Board.id, a ULID key: an id must be a ULID',
      'app.toml:15:57 error INVALID_DEFAULT entity.Card.fields.2.default: ' +
        'default "backlog" does not fit the Ref to Column.id, an Integer key: an id must be an integer',
      'app.toml:16:50 error INVALID_DEFAULT entity.Card.fields.3.default: ' +
        'default " todo" does not fit the Ref to Lane.id, a Text key: an id must not begin or end with white space',
      'app.toml:17:55 error INVALID_DEFAULT entity.Card.fields.4.default: ' +
        'default 3 does not fit the Ref to Lane.id, a Text key: an id must be a non-empty string',
      'app.toml:18:57 error INVALID_DEFAULT entity.Card.fields.5.default: ' +
        'default "not-an-address" does not fit the Ref to Lane.code (Email): expected an e-mail address',
      'app.toml:19:52 error INVALID_DEFAULT entity.Card.fields.6.default: default 1.5 does not fit Ref: ' +
        'expected a record id (a string or an integer)',
      'app.toml:26:15 error INVALID_MUTATION command.Park.mutations.columnId: ' +
        '"backlog" does not fit field "columnId", a Ref to Column.id, an Integer key: an id must be an integer',
      'app.toml:26:37 error INVALID_MUTATION command.Park.mutations.laneId: ' +
        '4 does not fit field "laneId", a Ref to Lane.id, a Text key: an id must be a non-empty string',
    ]);
  });

  it(
    'an index names known fields, each once, and a name SQLite and Prisma accept that no table or index has; ' +
      'repeats are warnings',
    () => {
      expect(diagnosticsOf('invalid-keys/index-errors')).to.deep.equal([
        'app.toml:20:26 error UNKNOWN_FIELD entity.Seat.indexes.0.fields.1: ' +
          'entity "Seat" has no field "rwo" (hint: did you mean "row"?)',
        'app.toml:21:33 error INVALID_INDEX entity.Seat.indexes.1.fields.2: ' +
          'field "eventId" is listed twice in this index',
        'app.toml:22:5 error INVALID_INDEX entity.Seat.indexes.2.fields: an index needs at least one field',
        'app.toml:23:23 error INVALID_INDEX entity.Seat.indexes.3.name: ' +
          'index name "seat-row" may hold only letters, digits and _, and not start with a digit',
        'app.toml:24:31 error INVALID_INDEX entity.Seat.indexes.4.name: index name "sqlite_seats" is reserved: ' +
          "names starting with sqlite_ are SQLite's, with _bp_ bp's",
        'app.toml:25:27 error DUPLICATE_DEFINITION entity.Seat.indexes.5.name: ' +
          'index name "event" is already the table of entity Event: tables and indexes share one namespace',
        'app.toml:26:49 error DUPLICATE_DEFINITION entity.Seat.indexes.6.name: ' +
          'index name "by_spot" is already the name of Event\'s index 0: tables and indexes share one namespace',
        'app.toml:27:31 error DUPLICATE_DEFINITION entity.Seat.indexes.7.name: ' +
          'index name "Seat_section_idx" is already the index of Seat.section: tables and indexes share one namespace',
        'app.toml:28:3 warning REDUNDANT_INDEX entity.Seat.indexes.8: this index adds nothing: ' +
          '"code" is unique = true, already unique and indexed; it is not generated',
        'app.toml:31:3 warning REDUNDANT_INDEX entity.Seat.indexes.11: this index adds nothing: ' +
          'entry 9 already indexes (section, row); it is not generated',
      ]);
    },
  );

  it(
    'a hasMany / hasOne foreign key is a Ref to the parent or a field that can hold its ids; ' +
      'a belongsTo needs a Ref (INVALID_RELATION)',
    () => {
      expect(diagnosticsOf('invalid-keys/relation-key-type')).to.deep.equal([
        'app.toml:7:46 error INVALID_RELATION entity.Order.relations.notes.foreign_key: Note.subjectId is Text: ' +
          'it cannot hold ids of Order (Integer) (hint: make it a Ref to Order, or an Integer field)',
        'app.toml:17:46 error INVALID_RELATION entity.Ticket.relations.notes.foreign_key: Note.orderNo is Integer: ' +
          'it cannot hold ids of Ticket (ULID) (hint: make it a Ref to Ticket, or a Text, ULID or UUID field)',
        'app.toml:18:44 error INVALID_RELATION entity.Ticket.relations.flag.foreign_key: Note.score is Float: ' +
          'it cannot hold ids of Ticket (ULID) (hint: make it a Ref to Ticket, or a Text, ULID or UUID field)',
        'app.toml:19:48 error INVALID_RELATION entity.Ticket.relations.owner.foreign_key: ' +
          'Ticket.ownerName must be a Ref to Note for this belongsTo relation (hint: ' +
          'a belongsTo foreign key is a Ref on this entity; only hasMany and hasOne may match a plain field)',
        'app.toml:20:47 error INVALID_RELATION entity.Ticket.relations.orders.foreign_key: ' +
          'Note.orderId is a Ref to Order, not to Ticket: it cannot hold this hasMany relation',
      ]);
    },
  );
});
