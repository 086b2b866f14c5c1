// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The layering (STYLE 2, 14; issue 33): what each folder may not import. Each entry is a regex over
 * the module specifier; a relative specifier is matched by the folders it walks through, so
 * `../../storage/sqlite/database.js` names `storage` and `sqlite` (a file named like a folder, such
 * as runtime/isolation/protocol.ts, is not one). Rules go by folder glob, so a file moved into a
 * folder takes that folder's rules. The same list also refuses `import()` of those
 * modules, and `import('…')` types, which `no-restricted-imports` does not see.
 */
const folder = (names) => `(^|/)(${names})/`;
const IO = {
  regex: '^(node:)?(http|https|http2|net|tls|dgram|child_process|fs|fs/promises|worker_threads)$',
  message:
    'no network, file or process I/O here: take it as a port (src/domain/ports) or do it in the daemon',
};
const SDKS = {
  regex: '^(ws|better-sqlite3|pg|pg-[a-z-]+|grammy|@discordjs/.+|discord-api-types/.+|@slack/.+)(/.*)?$',
  message:
    'no database driver, WebSocket or chat-platform SDK here: they belong to storage, surfaces and the daemon',
};
const OUTER = {
  regex: folder('surfaces|daemon'),
  message: 'the surfaces and the daemon are outer layers: they import this one, never the other way',
};
const LAYERS = [
  {
    name: 'domain',
    files: ['src/domain/**'],
    patterns: [
      IO,
      SDKS,
      OUTER,
      {
        regex: folder('storage|protocol'),
        message:
          'the domain stores through its ports (src/domain/ports), never through a backend or its rows; the wire protocol sits outside it',
      },
    ],
  },
  ...[
    ['sqlite', 'postgres', 'pg|pg-[a-z-]+'],
    ['postgres', 'sqlite', 'better-sqlite3'],
  ].map(([backend, other, otherDriver]) => ({
    name: `storage/${backend}`,
    files: [`src/storage/${backend}/**`],
    patterns: [
      OUTER,
      {
        regex: `${folder(other)}|^(${otherDriver})(/.*)?$`,
        message: `the ${backend} backend does not import the ${other} one: what both read goes in src/storage/rows`,
      },
      {
        regex: folder('runtime|protocol'),
        message: 'a store implements the domain ports and knows nothing of the runtime or the wire',
      },
    ],
  })),
  {
    name: 'storage/rows',
    files: ['src/storage/rows/**'],
    patterns: [
      OUTER,
      IO,
      SDKS,
      {
        regex: folder('sqlite|postgres|runtime|protocol'),
        message: 'the rows both backends read depend on the domain only, never on a backend',
      },
    ],
  },
  ...['telegram', 'discord', 'slack'].map((platform) => ({
    name: `platforms/${platform}`,
    files: [`src/surfaces/platforms/${platform}/**`],
    patterns: [
      {
        regex: folder('daemon'),
        message:
          'an adapter does not import the daemon: what it needs comes in its PlatformConfig (registry.ts)',
      },
      {
        regex: folder(
          [
            'storage',
            'runtime',
            'protocol',
            ...['telegram', 'discord', 'slack'].filter((p) => p !== platform),
          ].join('|'),
        ),
        message:
          'an adapter speaks its own platform: of Gatehouse it imports the domain and the platform registry, never storage, the runtime, the wire or another adapter',
      },
    ],
  })),
  {
    name: 'runtime',
    files: ['src/runtime/**'],
    patterns: [
      OUTER,
      {
        regex: '^(ws|better-sqlite3|pg|pg-[a-z-]+)(/.*)?$',
        message: 'the runtime does not store or serve: the domain does, through its ports',
      },
      {
        regex: `${folder('storage|protocol')}|(^|/)domain/(?!vocabulary\\.js$)`,
        message:
          'the runtime runs a turn on the vocabulary alone (src/domain/vocabulary.ts); the domain drives it, not the other way',
      },
    ],
  },
  {
    name: 'protocol',
    files: ['src/protocol/**'],
    patterns: [
      IO,
      SDKS,
      OUTER,
      {
        regex: `${folder('storage|runtime')}|(^|/)domain/(?!errors\\.js$)`,
        message: 'the wire protocol knows only the typed errors of the domain (src/domain/errors.ts)',
      },
    ],
  },
];

/** The rules of one layer: its patterns for static imports, for `import()` and for import types. */
function layerRules(patterns) {
  return {
    'no-restricted-imports': [
      'error',
      { patterns: patterns.map(({ regex, message }) => ({ regex, message })) },
    ],
    'no-restricted-syntax': [
      'error',
      ...patterns.flatMap(({ regex, message }) =>
        ['ImportExpression', 'TSImportType'].map((node) => ({
          selector: `${node}[source.value=/${regex.replaceAll('/', '\\/')}/]`,
          message,
        })),
      ),
    ],
  };
}

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'src/surfaces/dashboard/static/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },
  {
    // The dashboard page is built for the browser (DOM types) by its own tsconfig, with its unit test.
    files: ['src/surfaces/dashboard/web/**/*.ts', 'test/unit/dashboard/session-state.test.ts'],
    languageOptions: {
      parserOptions: {
        projectService: false,
        project: './src/surfaces/dashboard/web/tsconfig.json',
        tsconfigRootDir: import.meta.dirname,
      },
    },
  },
  {
    files: ['src/surfaces/dashboard/web/*.mjs'],
    languageOptions: { globals: { URL: 'readonly' } },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
  },
  ...LAYERS.map(({ name, files, patterns }) => ({
    name: `layering/${name}`,
    files,
    rules: layerRules(patterns),
  })),
);
