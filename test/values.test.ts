// The value formats of runtime-lib/core/values.ts, shared by the generator (blueprint defaults),
// the app (bodies and command inputs) and sign-up: date-times that exist, text that may be
// stored as given, and what counts as blank for a required field.

import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { expect } from 'chai';
import fc from 'fast-check';
import { isBlank, isCalendarDate, parseDateTime, textProblem } from '../runtime-lib/core/values.ts';

/** The OpenAPI document's `format: date-time`, as the tests' response checker validates it. */
const ajv = new Ajv2020({ strict: false });
(addFormats as unknown as (a: Ajv2020) => void)(ajv);
const openApiDateTime = ajv.compile({ type: 'string', format: 'date-time' });

const iso = (value: string) => parseDateTime(value)?.toISOString();

describe('parseDateTime', () => {
  it('reads RFC 3339 date-times into their instant', () => {
    expect(iso('2026-01-02T03:04:05Z')).to.equal('2026-01-02T03:04:05.000Z');
    expect(iso('2026-01-02T03:04:05.678Z')).to.equal('2026-01-02T03:04:05.678Z');
    expect(iso('2026-01-02T03:04:05+02:00')).to.equal('2026-01-02T01:04:05.000Z');
    expect(iso('2026-01-02T03:04:05-00:00')).to.equal('2026-01-02T03:04:05.000Z');
    expect(iso('2026-01-01T00:30:00+01:00')).to.equal('2025-12-31T23:30:00.000Z');
    expect(iso('2026-01-02T23:59:59.999-23:59')).to.equal('2026-01-03T23:58:59.999Z');
  });

  it('knows February 29th: leap years only (every 4th year, not centuries, but every 400th)', () => {
    for (const year of ['2024', '2000', '1600', '0000', '0004'])
      expect(iso(`${year}-02-29T12:00:00Z`), year).to.equal(`${year}-02-29T12:00:00.000Z`);
    for (const year of ['2023', '1900', '2100', '0001'])
      expect(parseDateTime(`${year}-02-29T12:00:00Z`), year).to.equal(undefined);
    expect(parseDateTime('2024-02-30T00:00:00Z')).to.equal(undefined);
  });

  it('refuses days a month does not have, and month 0 or 13', () => {
    for (const day of [
      '2023-04-31',
      '2023-06-31',
      '2023-09-31',
      '2023-11-31',
      '2023-01-32',
      '2023-01-00',
      '2023-00-10',
      '2023-13-10',
    ]) {
      expect(parseDateTime(`${day}T00:00:00Z`), day).to.equal(undefined);
    }
    for (const day of ['2023-01-31', '2023-03-31', '2023-04-30', '2023-12-31'])
      expect(parseDateTime(`${day}T00:00:00Z`), day).not.to.equal(undefined);
  });

  it('refuses hour 24, minute 60 and second 60 (a leap second: not an instant Date can hold)', () => {
    for (const time of ['24:00:00', '23:60:00', '23:59:60', '12:00:61', '99:00:00']) {
      expect(parseDateTime(`2024-01-01T${time}Z`), time).to.equal(undefined);
    }
    expect(iso('2024-01-01T23:59:59Z')).to.equal('2024-01-01T23:59:59.000Z');
    expect(iso('2024-01-01T00:00:00Z')).to.equal('2024-01-01T00:00:00.000Z');
  });

  it('refuses offsets beyond ±23:59', () => {
    for (const offset of ['+24:00', '-24:00', '+23:60', '+99:99'])
      expect(parseDateTime(`2024-01-01T00:00:00${offset}`), offset).to.equal(undefined);
    expect(iso('2024-01-01T00:00:00+23:59')).to.equal('2023-12-31T00:01:00.000Z');
  });

  it('takes fractions of 1 to 9 digits, kept to the millisecond (cut, not rounded)', () => {
    expect(iso('2024-01-01T00:00:00.1Z')).to.equal('2024-01-01T00:00:00.100Z');
    expect(iso('2024-01-01T00:00:00.57Z')).to.equal('2024-01-01T00:00:00.570Z');
    expect(iso('2024-01-01T00:00:00.123456789Z')).to.equal('2024-01-01T00:00:00.123Z');
    expect(iso('2024-01-01T00:00:00.999999999Z')).to.equal('2024-01-01T00:00:00.999Z');
    expect(parseDateTime('2024-01-01T00:00:00.1234567891Z')).to.equal(undefined);
    expect(parseDateTime('2024-01-01T00:00:00.Z')).to.equal(undefined);
  });

  it('takes lower-case t and z, as RFC 3339 (and so the OpenAPI date-time format) allows', () => {
    expect(iso('2024-01-01t10:00:00z')).to.equal('2024-01-01T10:00:00.000Z');
    expect(iso('2024-01-01t10:00:00+01:00')).to.equal('2024-01-01T09:00:00.000Z');
  });

  it('refuses what RFC 3339 does not allow: no seconds, no zone, a space, other shapes', () => {
    for (const value of [
      '2024-01-01T10:00Z',
      '2024-01-01T10:00:00',
      '2024-01-01 10:00:00Z',
      '2024-01-01',
      '2024-1-01T10:00:00Z',
      '2024-01-01T10:00:00+0100',
      '2024-01-01T10:00:00+01',
      '+002024-01-01T10:00:00Z',
      '2024-01-01T10:00:00Z ',
      ' 2024-01-01T10:00:00Z',
      '2024-01-01T10:00:00Z\n',
      '２０２４-01-01T10:00:00Z',
      'Mon, 01 Jan 2024 10:00:00 GMT',
      '',
    ]) {
      expect(parseDateTime(value), JSON.stringify(value)).to.equal(undefined);
    }
  });

  it('reads years before 100 as written (Date.UTC would read 0050 as 1950)', () => {
    expect(iso('0050-06-15T00:00:00Z')).to.equal('0050-06-15T00:00:00.000Z');
    expect(iso('0000-01-01T00:00:00+01:00')).to.equal('-000001-12-31T23:00:00.000Z');
  });

  it('agrees with the OpenAPI date-time format: whatever it accepts, the format accepts', () => {
    const two = (max: number) => fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, '0'));
    const candidate = fc
      .tuple(
        fc.integer({ min: 0, max: 9999 }).map((n) => String(n).padStart(4, '0')),
        two(13),
        two(32),
        fc.constantFrom('T', 't', ' '),
        two(25),
        two(61),
        two(61),
        fc.option(fc.stringMatching(/^\.\d{1,11}$/), { nil: '' }),
        fc.oneof(
          fc.constantFrom('Z', 'z'),
          fc.tuple(fc.constantFrom('+', '-'), two(25), two(61)).map(([s, h, m]) => `${s}${h}:${m}`),
        ),
      )
      .map(([y, mo, d, t, h, mi, s, f, z]) => ({
        text: `${y}-${mo}-${d}${t}${h}:${mi}:${s}${f}${z}`,
        sep: t,
        h,
        mi,
        s,
        f,
      }));
    fc.assert(
      fc.property(candidate, ({ text, sep, h, mi, s, f }) => {
        const parsed = parseDateTime(text);
        if (parsed) {
          expect(openApiDateTime(text), text).to.equal(true);
          // Date.parse agrees on every value that exists (it only goes wrong on those that do not).
          expect(parsed.getTime(), text).to.equal(Date.parse(text.toUpperCase()));
        } else if (openApiDateTime(text)) {
          // Refused although the format takes it: only the forms chosen above, and hours past 23 or
          // minutes past 59, which ajv-formats' leap-second arithmetic lets through with some offsets
          // ("0000-01-01T00:61:00+01:02" is 23:59 UTC to it).
          const impossible = Number(h) > 23 || Number(mi) > 59;
          expect(sep === ' ' || s === '60' || f.length > 10 || impossible, text).to.equal(true);
        }
      }),
      { numRuns: 5000 },
    );
  });
});

describe('isCalendarDate', () => {
  it('takes dates that exist and nothing else', () => {
    expect(isCalendarDate('2024-02-29')).to.equal(true);
    expect(isCalendarDate('2023-02-29')).to.equal(false);
    expect(isCalendarDate('2023-04-31')).to.equal(false);
    expect(isCalendarDate('2023-4-30')).to.equal(false);
  });
});

describe('textProblem', () => {
  it('finds nothing in ordinary text of any script, paired surrogates (emoji) included', () => {
    for (const value of [
      '',
      'plain',
      'Zoë Ωmega 東京 👩‍💻 😀',
      '\u00a0\u00a0',
      '\u200b\u200d\ufeff',
      '\u00a0\u00ff\u0100',
      '\uffff',
      '\ud800\udc00',
      '\udbff\udfff',
    ]) {
      expect(textProblem(value, false), JSON.stringify(value)).to.equal(undefined);
    }
  });

  it('finds every C0 control, DEL and every C1 control', () => {
    const controls = [
      ...Array.from({ length: 0x20 }, (_, i) => i),
      ...Array.from({ length: 0x21 }, (_, i) => 0x7f + i),
    ];
    for (const code of controls) {
      const c = String.fromCharCode(code);
      expect(textProblem(`a${c}b`, false), code.toString(16)).to.equal('CONTROL_CHARACTER');
      const lineBreak = code === 0x09 || code === 0x0a || code === 0x0d;
      expect(textProblem(`a${c}b`, true), code.toString(16)).to.equal(lineBreak ? undefined : 'CONTROL_CHARACTER');
    }
    // The neighbours of the ranges are text.
    for (const c of [' ', '~', '\u00a0']) expect(textProblem(c, false)).to.equal(undefined);
  });

  it('finds lone surrogates wherever they are', () => {
    for (const value of [
      '\ud800',
      '\udc00',
      'a\ud800',
      '\udfffa',
      'a\ud83db',
      '\ude00\ud83d',
      '😀\ud83d',
      '\ud83d\ud83d\ude00',
      'x\udc00\udc00',
    ]) {
      expect(textProblem(value, true), JSON.stringify(value)).to.equal('LONE_SURROGATE');
    }
  });

  it('agrees with String.prototype.isWellFormed on surrogates, for any string', () => {
    const wellFormed = (s: string) => (s as unknown as { isWellFormed(): boolean }).isWellFormed();
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary' }),
        fc.array(fc.integer({ min: 0xd800, max: 0xdfff }), { maxLength: 3 }),
        (s, halves) => {
          const value = s + String.fromCharCode(...halves) + s;
          const problem = textProblem(value, true);
          if (!wellFormed(value)) expect(problem).to.be.oneOf(['LONE_SURROGATE', 'CONTROL_CHARACTER']);
          else expect(problem).not.to.equal('LONE_SURROGATE');
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('reports the first problem in the text', () => {
    expect(textProblem('\u0000\ud800', false)).to.equal('CONTROL_CHARACTER');
    expect(textProblem('\ud800\u0000', false)).to.equal('LONE_SURROGATE');
  });
});

describe('isBlank', () => {
  it('is true for the empty string and white space only, false for anything else', () => {
    for (const value of ['', ' ', '   ', '\t\n\r ', '\u00a0', '\u3000', '\ufeff'])
      expect(isBlank(value), JSON.stringify(value)).to.equal(true);
    for (const value of ['a', ' a ', '\u200b', '.']) expect(isBlank(value), JSON.stringify(value)).to.equal(false);
  });
});
