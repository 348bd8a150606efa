/**
 * What the docs say of the code, read out of their markdown so that test/unit/docs-drift.test.ts can hold it
 * against the code: the log lines a runbook sends the on-call engineer looking for, the label values it names
 * for the job's metrics, and the commands it says a test runs. Apart from the test so that each check can be
 * fed a made-up doc and shown to catch what it is for.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Registry } from 'prom-client';
import ts from 'typescript';

/** A sentence of a doc's prose, its code spans cut out (the i-th left as a `\0<i>\0` mark) and listed. */
interface Sentence {
  text: string;
  spans: string[];
}

const FENCE = /^[ \t]*```[^\n]*\n([\s\S]*?)^[ \t]*```[^\n]*$/gm;
const MARK = /\0(\d+)\0/g;

/** The contents of a doc's fenced code blocks. */
function codeBlocks(markdown: string): string[] {
  return [...markdown.matchAll(FENCE)].map((m) => m[1]);
}

/**
 * The sentences of a doc's prose: a table row, a list item or a paragraph each, cut at full stops. Code spans
 * are cut out first, since their dots and semicolons are not the prose's.
 */
function sentences(markdown: string): Sentence[] {
  const units: string[] = [];
  let unit: string[] = [];
  const flush = () => {
    if (unit.length > 0) units.push(unit.join(' '));
    unit = [];
  };
  for (const line of markdown.replace(FENCE, '').split('\n')) {
    if (/^\s*$/.test(line) || /^\s*(\||#|[-*] |\d+\. )/.test(line)) flush();
    if (!/^\s*$/.test(line)) unit.push(line.trim());
    if (line.trim().startsWith('|')) flush();
  }
  flush();
  return units.flatMap((u) => {
    const spans: string[] = [];
    const masked = u.replace(/`([^`]+)`/g, (_, span: string) => `\0${spans.push(span) - 1}\0`);
    return masked.split(/(?<!\b(?:e\.g|i\.e)\.)(?<=[.!?])\s+(?=[A-Z*(\0[])/).map((piece) => {
      const local: string[] = [];
      const text = piece.replace(MARK, (_, i: string) => `\0${local.push(spans[Number(i)]) - 1}\0`);
      return { text, spans: local };
    });
  });
}

/** The TypeScript files under a folder. */
function typescriptFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.join(dir, f));
}

/** The literals and names of the code: what a log line or a log field a doc names has to be found among. */
export interface SourceText {
  /** String literals, and each template literal with `…` for its placeholders. */
  strings: string[];
  /** Template literals as whole-line patterns: `${name} failed: ${err}` takes `relay failed: …`. */
  templates: RegExp[];
  /** Identifiers and property names: a log call's fields (`{ jobRunId, err }`). */
  names: Set<string>;
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Reads every literal and name of the TypeScript under `dir` (the job's code: `src/`). */
export function sourceText(dir: string): SourceText {
  const found: SourceText = { strings: [], templates: [], names: new Set() };
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) found.strings.push(node.text);
    else if (ts.isTemplateExpression(node)) {
      const parts = [node.head.text, ...node.templateSpans.map((s) => s.literal.text)];
      found.strings.push(parts.join('…'));
      // A template of placeholders and a few characters would take any line: only worded ones count.
      if (parts.join('').replace(/[^a-z]/gi, '').length >= 5) {
        found.templates.push(new RegExp(`^${parts.map(escapeRegExp).join('.+')}$`, 's'));
      }
    } else if (ts.isIdentifier(node)) found.names.add(node.text);
    ts.forEachChild(node, visit);
  };
  for (const file of typescriptFiles(dir)) {
    visit(ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true));
  }
  return found;
}

/** A log line or log field a doc names, and how it has to match the code. */
export interface NamedLogLine {
  text: string;
  /** `.msg=="…"` in jq: the whole message. Else a part of one will do, as for grep, and `…` stands for anything. */
  exact: boolean;
  /** A single word: a one-word message or a field of a log line. */
  field: boolean;
  /** Where the doc names it: `grep`, `jq`, or the prose. */
  how: 'grep' | 'jq' | 'prose';
}

/** pino's own fields of every line, and the one kafkajs's lines carry. */
const LOGGER_FIELDS = ['msg', 'level', 'time', 'pid', 'hostname', 'component'];

/** Spans of a log sentence that are not log lines: a command to run, a variable, a number, a path. */
const NOT_A_LOG_LINE = [
  /^(docker|npm|npx|temporal|tctl|psql|jq|grep|curl|kubectl|kafka-[\w-]+\.sh)\b/,
  /^[A-Z][A-Z0-9_]*$/,
  /^[\d.]+\s?[a-z]*$/,
  /^[\w.-]*\/[\w./-]*$/,
];

/** A sentence that speaks of log lines: "logs", "logged", "log lines", "`msg` is", "(level 40)". */
const LOG_SENTENCE = /\blog(s|ged)?\b|\blevel \d\d\b/i;

/**
 * The log lines a doc sends its reader looking for: the patterns of its `grep` commands (in code blocks and
 * code spans), the messages its `jq` filters select (`.msg=="…"`) and the fields a `jq` on a log stream
 * prints, and the code spans of its sentences about logs (the activity logs `owner transaction failed`).
 */
export function namedLogLines(markdown: string): NamedLogLine[] {
  const named: NamedLogLine[] = [];
  // A command continued on the next line (`\` or a leading `|`) is read as one line.
  const code = [...codeBlocks(markdown), ...sentences(markdown).flatMap((s) => s.spans)].flatMap((c) =>
    c
      .replace(/\\\n\s*/g, ' ')
      .replace(/\n\s*\|/g, ' |')
      .split('\n'),
  );
  for (const line of code) {
    for (const m of line.matchAll(/\bgrep((?:\s+-[\w-]+)*)\s+(?:'([^']*)'|"([^"]*)"|([^\s|'"]+))/g)) {
      for (const alternative of (m[2] ?? m[3] ?? m[4]).split(/\\?\|/)) {
        const text = alternative.replace(/^\^|\$$/g, '').replace(/\\(.)/g, '$1');
        if (/[a-z]{2}/i.test(text)) named.push({ text, exact: false, field: false, how: 'grep' });
      }
    }
    for (const m of line.matchAll(/\.msg\s*==\s*"([^"]+)"/g)) {
      named.push({ text: m[1], exact: true, field: false, how: 'jq' });
    }
    // What a jq prints of a log stream (`docker compose logs … | jq '{time, msg, err}'`) are log fields.
    if (/\blogs\b[^|]*\|.*\bjq\b/.test(line)) {
      for (const m of line.matchAll(/\{([\w\s,]+)\}/g)) {
        for (const field of m[1].split(',').map((f) => f.trim())) {
          if (field) named.push({ text: field, exact: true, field: true, how: 'jq' });
        }
      }
    }
  }
  for (const s of sentences(markdown)) {
    if (!LOG_SENTENCE.test(s.text.replace(MARK, '')) && !s.spans.includes('msg')) continue;
    for (const span of s.spans) {
      if (NOT_A_LOG_LINE.some((re) => re.test(span))) continue;
      const field = /^[A-Za-z_]\w*$/.test(span);
      named.push({ text: span, exact: false, field, how: 'prose' });
    }
  }
  return named;
}

const isField = (name: string, source: SourceText) => source.names.has(name) || LOGGER_FIELDS.includes(name);

/** Whether the code has a log line or field a doc names; see {@link NamedLogLine} for how each must match. */
export function inSource(line: NamedLogLine, source: SourceText): boolean {
  const pair = /^(\w+): ([\w.-]+)$/.exec(line.text);
  if (pair) return isField(pair[1], source) && source.strings.includes(pair[2]);
  if (line.field && isField(line.text, source)) return true;
  if (line.exact) return source.strings.includes(line.text);
  const part = new RegExp(line.text.split('…').map(escapeRegExp).join('[^]*'));
  if (source.strings.some((s) => part.test(s))) return true;
  // Only a line that says where the code fills something in (`relay failed: …`) may be a template's.
  return line.text.includes('…') && source.templates.some((t) => t.test(line.text));
}

/** The job's metrics as the code registers them: metric → label → the values it starts at 0. */
export type RegisteredLabels = Map<string, Map<string, Set<string>>>;

/**
 * The labels of the job's metrics and the values the code registers for them: every value it knows in advance
 * starts at 0 once the metrics are created. A histogram's series (`_bucket`, `_sum`, `_count`) are listed under
 * their own names too. A label whose values come at run time only (`topic`, from the outbox rows) has none here,
 * so nothing is checked of it.
 */
export async function registeredLabels(registries: readonly Registry[]): Promise<RegisteredLabels> {
  const registered: RegisteredLabels = new Map();
  for (const registry of registries) {
    for (const metric of await registry.getMetricsAsJSON()) {
      const labels = new Map<string, Set<string>>();
      for (const value of metric.values) {
        for (const [label, v] of Object.entries(value.labels)) {
          if (label !== 'le' && v !== undefined) labels.set(label, (labels.get(label) ?? new Set()).add(String(v)));
        }
      }
      const series = String(metric.type) === 'histogram' ? ['', '_bucket', '_sum', '_count'] : [''];
      for (const suffix of series) registered.set(metric.name + suffix, labels);
    }
  }
  return registered;
}

/** Labels Prometheus gives every series of a scrape target, not the code. */
const TARGET_LABELS = ['job', 'instance'];

/** A metric named with a label, and the values named for it (none for a bare `{kind}`). */
interface Selector {
  metric: string;
  label: string;
  values: string[];
}

/**
 * The labels that metric selectors in a text name, with the values they compare them to (`=` or `!=`; a regex
 * matcher names no value). `kind="owner"|"cycle"` (a table's `\|` too) names both, and an alert's
 * `{{ $labels.kind }}` none.
 */
function selectors(text: string): Selector[] {
  const found: Selector[] = [];
  const plain = text.replace(/\{\{.*?\}\}/g, '\u2026');
  for (const m of plain.matchAll(/((?:\u2026|\.\.\.)?[a-zA-Z_:][\w:]*)\{([^{}]*)\}/g)) {
    for (const matcher of m[2].matchAll(/(\w+)\s*(=~|!~|!=|=)?\s*((?:"[^"]*"(?:\s*\\?\|\s*)?)*)/g)) {
      const [, label, op, quoted] = matcher;
      const values = /^(=|!=)$/.test(op ?? '=')
        ? [...quoted.matchAll(/"([^"]*)"/g)].map((v) => v[1]).filter((v) => v !== '' && !v.includes('\u2026'))
        : [];
      found.push({ metric: m[1], label, values });
    }
  }
  return found;
}

/** The job's metrics a name may stand for: itself, or the ones it ends (`errors_total`, `…_errors_total`). */
function metricsNamed(name: string, registered: RegisteredLabels): Map<string, Set<string>>[] {
  const bare = name.replace(/^(\u2026|\.\.\.)_?/, '');
  const exact = registered.get(bare);
  if (exact) return [exact];
  return [...registered].filter(([metric]) => metric.endsWith(`_${bare}`)).map(([, labels]) => labels);
}

/** A label value a doc or an alert names for one of the job's metrics, and what is wrong with it, if anything. */
export interface NamedLabelValue {
  metric: string;
  label: string;
  value: string;
  problem: string | undefined;
}

/**
 * The value as held to the code: a problem when the code does not register it, or when the metric has no such
 * label. Nothing is said of a label the code does not enumerate (`job`, or values known at run time only).
 */
function named(metric: string, label: string, value: string, registered: RegisteredLabels): NamedLabelValue[] {
  if (TARGET_LABELS.includes(label)) return [];
  // A metric whose labels only come at run time has no labelled values to hold a doc to.
  const known = metricsNamed(metric, registered).filter((labels) => labels.size > 0);
  if (known.length === 0) return [];
  const withLabel = known.filter((labels) => labels.has(label));
  const problem =
    withLabel.length === 0
      ? `no such label (it has ${[...known[0].keys()].join(', ')})`
      : withLabel.some((labels) => labels.get(label)!.has(value))
        ? undefined
        : `the code registers ${label} ${[...withLabel[0].get(label)!].join(', ')}`;
  return [{ metric, label, value, problem }];
}

/** The label, of a job metric whose values the code registers, that a text names, with or without a value. */
function enumeratedLabels(text: string, registered: RegisteredLabels): Selector[] {
  return selectors(text).filter(
    (s) => !TARGET_LABELS.includes(s.label) && metricsNamed(s.metric, registered).some((l) => l.has(s.label)),
  );
}

/** The label values a text names for the job's metrics in selectors: `errors_total{kind="cycle"}`. */
export function namedLabelValues(text: string, registered: RegisteredLabels): NamedLabelValue[] {
  return selectors(text).flatMap((s) => s.values.flatMap((v) => named(s.metric, s.label, v, registered)));
}

/**
 * The label values a passage glosses, where it names one such label of a job metric: `owner = an owner
 * transaction failed …, cycle = …`, as an alert's description explains the `kind` it names. A passage is one
 * sentence or one alert's annotations: across a whole file, `x = y` is SQL as often as a gloss.
 */
export function glossedLabelValues(passage: string, registered: RegisteredLabels): NamedLabelValue[] {
  const labels = enumeratedLabels(passage, registered);
  if (new Set(labels.map((l) => l.label)).size !== 1) return [];
  return [...passage.matchAll(/(?:^|[\s(,;:])`?([a-z][\w-]*)`? = /g)].flatMap((m) =>
    named(labels[0].metric, labels[0].label, m[1], registered),
  );
}

/**
 * The label values a doc's prose lists or glosses. A table whose first column is headed by a label's name,
 * right after a paragraph that names the metric with it (`…_errors_total{kind}` … Kinds:), lists every value
 * the code registers: one it lacks comes back with that problem. A sentence glosses as
 * {@link glossedLabelValues} reads.
 */
export function docLabelValues(markdown: string, registered: RegisteredLabels): NamedLabelValue[] {
  const found = sentences(markdown).flatMap((s) =>
    glossedLabelValues(
      s.text.replace(MARK, (_, i: string) => `\`${s.spans[Number(i)]}\``),
      registered,
    ),
  );
  const paragraphs = markdown.replace(FENCE, '').split(/\n\s*\n/);
  paragraphs.forEach((table, i) => {
    const rows = table.trim().split('\n');
    const header = /^\|\s*`?(\w+)`?\s*\|/.exec(rows[0]);
    const about = header && i > 0 ? enumeratedLabels(paragraphs[i - 1], registered) : [];
    const label = about.find((l) => l.label === header?.[1]);
    if (!label) return;
    const listed = rows.slice(2).flatMap((row) => [...row.split('|')[1].matchAll(/`([^`]+)`/g)].map((m) => m[1]));
    found.push(...listed.flatMap((value) => named(label.metric, label.label, value, registered)));
    const values = metricsNamed(label.metric, registered)
      .find((l) => l.has(label.label))!
      .get(label.label)!;
    for (const value of [...values].filter((v) => !listed.includes(v))) {
      found.push({ metric: label.metric, label: label.label, value, problem: 'registered, and not in the table' });
    }
  });
  return found;
}

/** A command a doc says a test file runs. */
export interface ClaimedRun {
  test: string;
  command: string;
}

const TEST_FILE = /^test\/[\w/.-]+\.test\.ts$/;

/**
 * The commands a doc says a test runs, where it names the test file: the code spans after "`test/….test.ts`
 * runs", up to the next file the sentence names, and the ones before "run by" (or "tested in", "checked by")
 * such a file. What is in parentheses says how or why, not what, and is left out.
 */
export function claimedRuns(markdown: string): ClaimedRun[] {
  const claims: ClaimedRun[] = [];
  for (const s of sentences(markdown)) {
    const mentions = [...s.text.matchAll(/\0(\d+)\0/g)].filter((m) => TEST_FILE.test(s.spans[Number(m[1])]));
    // "…, which builds …", "…; its `beforeAll` runs …", "in every `npm test`": another subject, or when it runs.
    const spansOf = (part: string) => {
      // A claim made inside parentheses ends with them.
      let depth = 0;
      const close = [...part].findIndex((c) => (depth += c === '(' ? 1 : c === ')' ? -1 : 0) < 0);
      let outer = close < 0 ? part : part.slice(0, close);
      while (/\([^()]*\)/.test(outer)) outer = outer.replace(/\([^()]*\)/g, '');
      const clause = outer.split(/;|,\s+(?:which|whose|where)\b/)[0];
      return [...clause.matchAll(/(\b(?:in|on|during) (?:every |each )?)?\0(\d+)\0/g)]
        .filter((m) => m[1] === undefined)
        .map((m) => s.spans[Number(m[2])]);
    };
    mentions.forEach((m, k) => {
      const test = s.spans[Number(m[1])];
      const start = m.index + m[0].length;
      const active = /^\s*runs?\b/.exec(s.text.slice(start));
      const before = s.text.slice(mentions[k - 1] ? mentions[k - 1].index + mentions[k - 1][0].length : 0, m.index);
      const passive = /\b(?:run|tested|checked) (?:by|in)\s*$/.test(before);
      const commands = active
        ? spansOf(s.text.slice(start + active[0].length, mentions[k + 1]?.index))
        : passive
          ? spansOf(before.split(';').pop()!)
          : [];
      for (const command of commands) claims.push({ test, command });
    });
  }
  return claims;
}

/**
 * Whether a test's source runs a command: holds its words, arguments passed one string literal each
 * (`'workflow', 'list'`) read as one command, and the program's name left out where a helper adds it
 * (`temporalCli('schedule', 'trigger')` runs `temporal schedule trigger`).
 */
export function testRuns(testSource: string, command: string): boolean {
  const joined = testSource.replace(/(['"`])\s*,\s*(['"`])/g, ' ');
  const words = command.trim().split(/\s+/);
  return joined.includes(words.join(' ')) || (words.length >= 3 && joined.includes(words.slice(1).join(' ')));
}
