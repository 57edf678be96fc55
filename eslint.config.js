// ESLint flat config: typescript-eslint's type-checked recommended rules over every package's
// sources and tests (each file read with the types of its tsconfig: packages/*/tsconfig.json for
// src, packages/*/test/tsconfig.json for tests), the untyped recommended rules over the
// JavaScript of benches, scripts and bins.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'reports/**', 'coverage/**', 'data/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['vitest.config.ts'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
  },
  {
    languageOptions: {
      globals: {
        console: 'readonly',
        process: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        queueMicrotask: 'readonly',
        URL: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        performance: 'readonly',
        structuredClone: 'readonly',
        fetch: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      'no-constant-condition': ['error', { checkLoops: false }],
      // A promise nobody awaits loses its rejection: fire-and-forget is written `void p` with its
      // failure handled (or counted) inside, and a promise is never passed where a callback's
      // return is ignored (an event listener, a timer) unless wrapped so.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      // Off: an `async` function without `await` still turns a throw into a rejection, which is
      // what its callers (route handlers, interface methods returning promises) rely on; removing
      // `async` to please the rule would change that.
      '@typescript-eslint/require-await': 'off',
      // A rejection passes on what it was given (a caught error, an AbortSignal's reason) as is.
      '@typescript-eslint/prefer-promise-reject-errors': [
        'error',
        { allowThrowingAny: true, allowThrowingUnknown: true },
      ],
    },
  },
  {
    // Tests read JSON bodies, parsed logs and fixtures as `any` on purpose: the assertions are the
    // check. Promise rules and the rest of the type-checked set apply to them as to src.
    files: ['packages/*/test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // Production code takes its clock, random source, IP parsing and certificates from
    // @coral/runtime; @coral/testkit holds the test doubles and is a devDependency only.
    files: ['packages/*/src/**/*.ts'],
    ignores: ['packages/testkit/src/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: '@coral/testkit',
              message: 'production code imports @coral/runtime; @coral/testkit is for tests only',
            },
          ],
        },
      ],
    },
  },
  // JavaScript (benches, scripts, bins) is in no tsconfig: the untyped rules only.
  { files: ['**/*.js', '**/*.mjs', '**/*.cjs'], ...tseslint.configs.disableTypeChecked },
);
