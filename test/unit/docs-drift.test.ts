/**
 * What operators and newcomers read cannot drift from the code: every repository path and npm script named
 * in a source comment, a help text or a doc exists; the configuration table of docs/DEPLOYMENT.md lists
 * exactly the variables src/config/ reads; the backfill's help states the AsOf rule the cycle follows; the
 * log lines the runbooks send the on-call engineer looking for are the code's; the label values the docs and
 * the alerts name for the job's metrics are ones it registers; and a command a doc says a test runs, it runs.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { schema } from '../../src/config/schema';
import { THRESHOLDS_SETTING } from '../../src/domain/settings';
import { createRelayMetrics, createWorkerMetrics } from '../../src/observability/metrics';
import {
  claimedRuns,
  docLabelValues,
  glossedLabelValues,
  inSource,
  namedLabelValues,
  namedLogLines,
  registeredLabels,
  sourceText,
  testRuns,
  type NamedLabelValue,
} from '../support/doc-claims';

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

const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');

/** The markdown files under a folder of the repository. */
const markdownUnder = (folder: string) =>
  fs
    .readdirSync(path.join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md'))
    .map((f) => path.join(folder, f));

/** What the on-call engineer works from: the runbooks, and the command reference they point to. */
const ON_CALL_DOCS = [...markdownUnder('docs/runbooks'), 'docs/OPERATIONS.md'];

/** Lines of other programs' logs that a runbook names: the Temporal server's (`docker compose logs temporal`). */
const OTHER_PROGRAMS_LOG_LINES = ['Schedule missed catchup window'];

test('every log line and log field the runbooks and OPERATIONS.md send the reader looking for is in src/', () => {
  const source = sourceText(path.join(ROOT, 'src'));
  const named = ON_CALL_DOCS.flatMap((file) => namedLogLines(read(file)).map((line) => ({ file, line })));
  const missing = named
    .filter(({ line }) => !inSource(line, source) && !OTHER_PROGRAMS_LOG_LINES.includes(line.text))
    .map(({ file, line }) => `${file}: ${line.how} ${JSON.stringify(line.text)}`);
  expect(missing).toEqual([]);
  // The forms the docs use are read: jq's `.msg=="…"` and its fields, and the messages their sentences quote.
  expect(named.map(({ line }) => `${line.how} ${line.text}`)).toEqual(
    expect.arrayContaining([
      'jq cycle completed',
      'jq ownerUserId',
      'prose owner transaction failed',
      'prose relay stopped',
    ]),
  );
});

test('a log line src/ does not have is found, whether grepped for, selected with jq or quoted', () => {
  const doc = [
    '```bash',
    "docker compose logs worker | grep 'cycle exploded'",
    "docker compose logs worker | grep '^{' | jq -c 'select(.msg==\"cycle complete\") | {time, msg, jobRunIdd}'",
    '```',
    '',
    'The worker logs `owner vanished` (level 40), and `cycle completed` once a cycle ends. Or',
    "`grep -E 'owner failed|owner evaporated'` the relay's output, which names `RELAY_BATCH_SIZE`.",
  ].join('\n');
  const source = sourceText(path.join(ROOT, 'src'));
  expect(namedLogLines(doc).flatMap((line) => (inSource(line, source) ? [] : `${line.how} ${line.text}`))).toEqual([
    'grep cycle exploded',
    'jq cycle complete',
    'jq jobRunIdd',
    'grep owner evaporated',
    'prose owner vanished',
  ]);
});

/** The job's metrics as the worker (with the default thresholds) and the relay register them. */
const jobMetrics = () =>
  registeredLabels([createWorkerMetrics(THRESHOLDS_SETTING.default).registry, createRelayMetrics().registry]);

interface AlertRule {
  alert?: string;
  expr: string;
  annotations?: Record<string, string>;
}

/** The alerting rules of ops/prometheus/alerts.yml. */
function alertRules(): AlertRule[] {
  const file = parseYaml(read('ops/prometheus/alerts.yml')) as { groups: { rules: AlertRule[] }[] };
  return file.groups.flatMap((g) => g.rules).filter((r) => r.alert);
}

const describeValue = (where: string, n: NamedLabelValue) =>
  `${where}: ${n.metric}{${n.label}="${n.value}"}: ${n.problem ?? 'registered'}`;

test('every label value the docs and the alerts name for a job metric is one the code registers', async () => {
  const registered = await jobMetrics();
  const named = [
    ...[...markdownUnder('docs'), 'README.md'].flatMap((file) =>
      [...namedLabelValues(read(file), registered), ...docLabelValues(read(file), registered)].map((n) =>
        describeValue(file, n),
      ),
    ),
    ...alertRules().flatMap((rule) => {
      const annotations = Object.values(rule.annotations ?? {}).join('\n');
      return [
        ...namedLabelValues(`${rule.expr}\n${annotations}`, registered),
        ...glossedLabelValues(annotations, registered),
      ].map((n) => describeValue(`alerts.yml ${rule.alert}`, n));
    }),
    ...namedLabelValues(read('ops/prometheus/alerts.test.yml'), registered).map((n) =>
      describeValue('alerts.test.yml', n),
    ),
  ];
  expect(named.filter((n) => !n.endsWith(': registered'))).toEqual([]);
  // The forms in use are read: the runbook's table of kinds and its `cycles_total{status="failed"}`, and the
  // errors alert's gloss of its kinds.
  expect(named).toEqual(
    expect.arrayContaining([
      describeValue('docs/runbooks/document-expiry-reminder.md', {
        metric: 'profile_document_expiry_reminder_errors_total',
        label: 'kind',
        value: 'cycle',
        problem: undefined,
      }),
      describeValue('docs/runbooks/document-expiry-reminder.md', {
        metric: 'cycles_total',
        label: 'status',
        value: 'failed',
        problem: undefined,
      }),
      describeValue('alerts.yml DocumentExpiryReminderErrors', {
        metric: 'profile_document_expiry_reminder_errors_total',
        label: 'kind',
        value: 'owner',
        problem: undefined,
      }),
    ]),
  );
});

test('a label value the code does not register is found, in a selector, a table of values or a gloss', async () => {
  const registered = await jobMetrics();
  const doc = [
    'Pages that failed: `…_errors_total{kind="page"}`; cycles: `cycles_total{outcome="failed"}`; by topic:',
    '`profile_outbox_relay_published_total{topic="any.topic"}` (its values come from the rows).',
    '',
    '`profile_document_expiry_reminder_errors_total{kind}` counts, by kind:',
    '',
    '| kind | what failed |',
    '|---|---|',
    '| `owner` | an owner |',
    '| `page` | a page |',
    '',
    'Of `errors_total{kind}`: `owner` = an owner failed, `batch` = a batch failed.',
  ].join('\n');
  const problems = [...namedLabelValues(doc, registered), ...docLabelValues(doc, registered)].flatMap((n) =>
    n.problem ? `${n.label}=${n.value}: ${n.problem}` : [],
  );
  expect(problems.sort()).toEqual(
    [
      'kind=page: the code registers kind owner, cycle',
      'outcome=failed: no such label (it has status)',
      'kind=batch: the code registers kind owner, cycle',
      'kind=page: the code registers kind owner, cycle',
      'kind=cycle: registered, and not in the table',
    ].sort(),
  );
  const alert = 'profile_document_expiry_reminder_errors_total{kind="{{ $labels.kind }}"}: page = a page failed';
  expect(glossedLabelValues(alert, registered).map((n) => n.problem)).toEqual(['the code registers kind owner, cycle']);
});

/** Where docs say what a test runs: every doc but the records of the past. */
const CLAIMING_DOCS = [...markdownUnder('docs'), 'README.md', 'CONTRIBUTING.md'];

test('every command a doc says a test runs, that test file exists and runs', () => {
  const claims = CLAIMING_DOCS.flatMap((file) => claimedRuns(read(file)).map((claim) => ({ file, ...claim })));
  const untrue = claims
    .filter((c) => !fs.existsSync(path.join(ROOT, c.test)) || !testRuns(read(c.test), c.command))
    .map((c) => `${c.file}: ${c.test} does not run \`${c.command}\``);
  expect(untrue).toEqual([]);
  expect(claims.map((c) => `${c.test}: ${c.command}`)).toEqual(
    expect.arrayContaining([
      'test/integration/temporal-cli.test.ts: schedule backfill',
      'test/integration/tctl.test.ts: workflow list --query',
      'test/production/compose-kafka.test.ts: kafka-acls',
    ]),
  );
});

test('a command a doc says a test runs, and the test does not, is found', () => {
  const doc = [
    '`test/unit/thresholds.test.ts` runs `temporal schedule frobnicate` (with `--dry-run`) in every',
    '`npm test`; `test/unit/gone.test.ts` runs `ls`. The prune is run by `test/unit/prune-cutoff.test.ts`,',
    'and `temporal workflow cancel` is checked by `test/unit/thresholds.test.ts`.',
  ].join('\n');
  expect(claimedRuns(doc).map((c) => `${c.test}: ${c.command}`)).toEqual([
    'test/unit/thresholds.test.ts: temporal schedule frobnicate',
    'test/unit/gone.test.ts: ls',
    'test/unit/thresholds.test.ts: temporal workflow cancel',
  ]);
  expect(testRuns("cli('workflow',\n  'list', '--query', q)", 'temporal workflow list --query')).toBe(true);
  expect(testRuns("cli('workflow', 'list')", 'temporal workflow cancel')).toBe(false);
});
