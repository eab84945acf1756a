// ESLint over bp's own TypeScript: the recommended rules of ESLint and typescript-eslint. Prettier
// owns formatting (.prettierrc.json); `npm run lint` runs both, and `npm test` runs it first.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'test/.tmp/', 'test/golden/', 'test/fixtures/invalid/', 'bench/.work/', 'out/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      // `_` names what is left out on purpose: a rest sibling, or an argument Express counts.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // chai's assertions are property reads: `expect(x).to.be.empty`.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-unused-expressions': 'off' },
  },
);
