/**
 * What operators and newcomers read cannot drift from the code: every repository path and npm script named
 * in a source comment, a help text or a doc exists; the configuration table of docs/DEPLOYMENT.md lists
 * exactly the variables src/config/ reads; and the backfill's help states the AsOf rule the cycle follows.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { schema } from '../../src/config/schema';

const ROOT = path.resolve(__dirname, '..', '..');

const ALL_FILES = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' })
  .split('\0')
  .filter((f) => f !== '' && fs.existsSync(path.join(ROOT, f)));

/** The files a reader follows: code and its comments, scripts, benchmarks, tests, ops files and the docs. */
function trackedFiles(): string[] {
  return ALL_FILES.filter((f) => /\.(ts|js|mjs|md|sh|ya?ml|sql|json|properties|conf)$/.test(f) || f === 'Dockerfile')
    .filter((f) => !f.startsWith('test/fixtures/') && f !== 'package-lock.json')
    .filter((f) => !/^bench\/explain-.*\.txt$/.test(f));
}

/**
 * Records of the past, where a path may name what was there then: the changelog and the benchmark's
 * history. A path they name is not checked.
 */
const HISTORY = new Set(['CHANGELOG.md', 'bench/REPORT-HISTORY.md']);

/** Code that runs older revisions of this repository names the paths those revisions had. */
const OLDER_REVISIONS: Record<string, string[]> = {
  'scripts/record-histories/checkout.ts': ['src/config.ts'],
  'bench/compare/revisions.ts': ['scripts/bench.ts'],
};

const TOP_FOLDERS = ['src', 'scripts', 'bench', 'test', 'docs', 'ops', 'migrations', '.ci'];
const PATH_RE = new RegExp(
  `(?<![\\w./@-])(?:${TOP_FOLDERS.map((f) => f.replace('.', '\\.')).join('|')})/[\\w.@*{}-]+(?:/[\\w.@*{}-]+)*`,
  'g',
);

/** Paths a file names, without a trailing dot or anchor, skipping globs and placeholders. */
function namedPaths(text: string): string[] {
  return [...text.matchAll(PATH_RE)].map((m) => m[0].replace(/[.,:;]+$/, '')).filter((p) => !/[*{}]|<|NNN|XXX/.test(p));
}

function isIgnored(relative: string): boolean {
  try {
    // A folder that does not exist yet matches a `folder/` pattern only with its slash.
    execFileSync('git', ['check-ignore', '-q', `${relative}/`], { cwd: ROOT, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * A named path exists as a file or folder, as a module name without its ending, as the prefix of a family of
 * files (`bench/explain-`, `migrations/008`), or under a folder git ignores because runs write it
 * (`bench/results`).
 */
function exists(relative: string): boolean {
  if (['', '.ts', '/index.ts', '.test.ts'].some((suffix) => fs.existsSync(path.join(ROOT, relative + suffix)))) {
    return true;
  }
  if (/(-|\/\d{3})$/.test(relative) && ALL_FILES.some((f) => f.startsWith(relative))) return true;
  return isIgnored(relative);
}

test('every repository path named in the code, its comments and help texts, and the docs exists', () => {
  const missing: string[] = [];
  const files = trackedFiles();
  for (const file of files) {
    if (HISTORY.has(file) || file === 'test/unit/docs-drift.test.ts') continue;
    const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
    for (const named of new Set(namedPaths(text))) {
      if (!exists(named) && !OLDER_REVISIONS[file]?.includes(named)) missing.push(`${file}: ${named}`);
    }
  }
  expect(missing).toEqual([]);
});

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(markdown: string): Set<string> {
  const text = markdown.replace(/^```[\s\S]*?^```/gm, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1])));
}

test('every link between the docs reaches a file, and a heading where it names one', () => {
  const broken: string[] = [];
  for (const file of ALL_FILES.filter((f) => f.endsWith('.md'))) {
    const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const [target, anchor] = m[1].split('#');
      if (/^[a-z]+:/.test(target)) continue;
      const resolved = target === '' ? file : path.normalize(path.join(path.dirname(file), target));
      if (!fs.existsSync(path.join(ROOT, resolved))) broken.push(`${file}: ${m[1]} (no such file)`);
      else if (anchor && resolved.endsWith('.md')) {
        if (!anchorsOf(fs.readFileSync(path.join(ROOT, resolved), 'utf8')).has(anchor)) {
          broken.push(`${file}: ${m[1]} (no such heading)`);
        }
      }
    }
  }
  expect(broken).toEqual([]);
});

test('a path or a link that does not exist is found', () => {
  expect(namedPaths('see src/nope/gone.ts and docs/DESIGN.md.').filter((p) => !exists(p))).toEqual([
    'src/nope/gone.ts',
  ]);
  expect(anchorsOf('# A heading: with (punctuation)\n```\n# not a heading\n```\n')).toEqual(
    new Set(['a-heading-with-punctuation']),
  );
});

test('every `npm run <script>` named in the code and the docs is a script of package.json', () => {
  const scripts = Object.keys(
    (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
      .scripts,
  );
  const unknown: string[] = [];
  for (const file of trackedFiles()) {
    if (HISTORY.has(file)) continue;
    const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
    for (const m of text.matchAll(/npm run (?:-s )?([\w:-]+)/g)) {
      if (!scripts.includes(m[1])) unknown.push(`${file}: npm run ${m[1]}`);
    }
  }
  expect(unknown).toEqual([]);
});

/** The variables in the first column of the "Configuration" table of docs/DEPLOYMENT.md. */
function documentedVariables(): Set<string> {
  const text = fs.readFileSync(path.join(ROOT, 'docs/DEPLOYMENT.md'), 'utf8');
  const section = text.split(/^## Configuration$/m)[1]?.split(/^## /m)[0];
  if (!section) throw new Error('docs/DEPLOYMENT.md has no "## Configuration" section');
  const names = new Set<string>();
  for (const line of section.split('\n').filter((l) => l.startsWith('| `'))) {
    const firstCell = line.split('|')[1];
    for (const m of firstCell.matchAll(/`([A-Z][A-Z0-9_]+)/g)) names.add(m[1]);
  }
  return names;
}

/**
 * The variables the Temporal connection profile reads beside the schema: the SDK's envconfig reads the standard
 * `TEMPORAL_*` names, src/config/temporal-profile.ts adds this job's aliases and the profile file.
 */
const TEMPORAL_PROFILE_VARIABLES = [
  'TEMPORAL_GRPC_META_',
  'TEMPORAL_API_KEY',
  'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
  'TEMPORAL_TLS_SERVER_NAME',
  'TEMPORAL_TLS_CA_PATH',
  'TEMPORAL_TLS_CERT_PATH',
  'TEMPORAL_TLS_KEY_PATH',
  'TEMPORAL_PROFILE',
  'TEMPORAL_CONFIG_FILE',
];

test('the configuration table of docs/DEPLOYMENT.md lists exactly the variables src/config/ reads', () => {
  const read = new Set([...Object.keys(schema.shape), ...TEMPORAL_PROFILE_VARIABLES]);
  const documented = documentedVariables();
  expect({ undocumented: [...read].filter((v) => !documented.has(v)).sort() }).toEqual({ undocumented: [] });
  expect({ notRead: [...documented].filter((v) => !read.has(v)).sort() }).toEqual({ notRead: [] });
});

test("the backfill's help says each cycle runs as of its own start, never as of the past day", () => {
  const help = execFileSync(
    process.execPath,
    [require.resolve('tsx/cli'), 'src/client.ts', 'schedule', 'backfill', '--help'],
    { cwd: ROOT, encoding: 'utf8', env: { ...process.env, LOG_LEVEL: 'silent' } },
  ).replace(/\s+/g, ' ');
  expect(help).toMatch(/as of its own start/);
  expect(help).not.toMatch(/as of its action time/);
});
