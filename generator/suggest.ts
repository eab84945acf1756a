// "Did you mean" hints for misspelled names (types, keys, entities). Transpositions count as
// one edit because `Integre` for `Integer` is the typical typo, hence optimal string
// alignment rather than plain Levenshtein.

/** The candidate closest to `input`, or undefined when none is close enough to be a likely typo. */
export function closest(input: string, candidates: readonly string[]): string | undefined {
  // Short names tolerate one edit; longer ones one edit per three characters.
  const limit = Math.max(1, Math.floor(input.length / 3));
  const needle = input.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const distance = editDistance(needle, candidate.toLowerCase());
    // Strictly smaller keeps the earlier candidate on ties.
    if (distance <= limit && distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

export function didYouMean(input: string, candidates: readonly string[]): string | undefined {
  const match = closest(input, candidates);
  return match === undefined ? undefined : `did you mean "${match}"?`;
}

/** Damerau-Levenshtein distance, optimal string alignment variant, over code points. */
function editDistance(a: string, b: string): number {
  const s = Array.from(a);
  const t = Array.from(b);
  // Three rows suffice: a transposition looks back two rows.
  let before: number[] = [];
  let previous = Array.from({ length: t.length + 1 }, (_, j) => j);
  for (let i = 1; i <= s.length; i++) {
    const current = [i];
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      let d = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) d = Math.min(d, before[j - 2] + 1);
      current.push(d);
    }
    before = previous;
    previous = current;
  }
  return previous[t.length];
}
