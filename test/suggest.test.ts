import { expect } from 'chai';
import { closest, didYouMean } from '../generator/suggest.ts';

const TYPES = ['Text', 'LongText', 'Integer', 'Decimal', 'Boolean', 'DateTime', 'UUID', 'ULID', 'Enum', 'Ref'];

describe('closest', () => {
  it('finds a name one edit away', () => {
    expect(closest('Txt', TYPES)).to.equal('Text');
    expect(closest('Integr', TYPES)).to.equal('Integer');
    expect(closest('primary_ky', ['required', 'primary_key', 'unique'])).to.equal('primary_key');
  });

  it('compares case-insensitively but answers with the candidate as written', () => {
    expect(closest('ulid', TYPES)).to.equal('ULID');
  });

  it('counts a transposition as one edit', () => {
    // Plain Levenshtein would count two edits, more than a 4-letter name allows.
    expect(closest('Txet', TYPES)).to.equal('Text');
  });

  it('gives up when nothing is close enough', () => {
    expect(closest('Banana', TYPES)).to.equal(undefined);
    // Two edits from Text, but four letters only allow one.
    expect(closest('Strng', TYPES)).to.equal(undefined);
    expect(closest('x', [])).to.equal(undefined);
  });

  it('prefers the smaller distance, then the earlier candidate', () => {
    expect(closest('UUIE', TYPES)).to.equal('UUID');
    expect(closest('abcd', ['abce', 'abcf'])).to.equal('abce');
    expect(closest('abcdefghi', ['abcdefxyz', 'abcdefghz'])).to.equal('abcdefghz');
  });
});

describe('didYouMean', () => {
  it('phrases the hint, or returns undefined', () => {
    expect(didYouMean('Integr', TYPES)).to.equal('did you mean "Integer"?');
    expect(didYouMean('Banana', TYPES)).to.equal(undefined);
  });
});
