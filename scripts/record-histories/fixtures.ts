/**
 * The replay fixtures' format: where they live, how a file is named, how a cycle's runs are fetched, and
 * how a history is written to and read from one. The recorder (scripts/record-histories/) writes them, test/unit/replay.test.ts replays
 * the committed set, test/integration/record-histories.test.ts replays what the recorder just wrote; all
 * three take the format from here, so they cannot drift apart.
 *
 * A fixture is one run's history as proto3 JSON, two-space indented: the format of
 * `temporal workflow show --output json`, so a history taken from a server by hand reads back the same.
 */
import fs from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';

export type History = temporal.api.history.v1.IHistory;

/** The committed fixtures, replayed in CI. */
export const FIXTURES_DIR = path.resolve(__dirname, '..', '..', 'test', 'fixtures', 'histories');

/**
 * protobufjs's proto3 JSON codec, from the copy of protobufjs that `@temporalio/proto` is built with.
 *
 * Why not `historyToJSON`/`historyFromJSON` from `@temporalio/common/lib/proto-utils` (which
 * `Worker.runReplayHistory` also calls on a history whose event ids are strings)? In this install they
 * throw `TypeError: type must be a Type`: `@temporalio/common` and `@temporalio/proto` each get a copy of
 * their own of protobufjs 8 (the root holds protobufjs 7 for @grpc/proto-loader and the OTLP exporter),
 * and the codec of one copy rejects the reflected types of the other (`instanceof Type`). The codec of
 * `@temporalio/proto`'s own copy is the same code, so it reads and writes the same JSON; it is loaded with
 * the module-local `require` so that under Jest it comes from the same module registry as the types.
 */
interface ProtoJson {
  toJson(type: unknown, message: unknown): unknown;
  fromJson(type: unknown, json: unknown, options?: { ignoreUnknownFields?: boolean }): History | null;
}
const protojson: ProtoJson =
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a file of another package's protobufjs copy, see above
  require(require.resolve('protobufjs/ext/protojson', { paths: [path.dirname(require.resolve('@temporalio/proto'))] }));
const HistoryType = temporal.api.history.v1.History;

/** A history as fixture JSON: proto3 JSON, two-space indented, as `historyToJSON` would write it. */
export function historyToFixtureJSON(history: History): string {
  return `${JSON.stringify(protojson.toJson(HistoryType, HistoryType.fromObject(history)), null, 2)}\n`;
}

/** A fixture (or `temporal workflow show --output json`) read back into a History for `runReplayHistories`. */
export function historyFromFixtureJSON(json: string): History {
  const history = protojson.fromJson(HistoryType, JSON.parse(json), { ignoreUnknownFields: true });
  if (!history?.events?.length) throw new TypeError('not a workflow history: no events');
  return history;
}

/** The workflow id a history was recorded under (replay needs it: the cycle reads workflowInfo().workflowId). */
function historyWorkflowId(history: History): string | undefined {
  return history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowId || undefined;
}

/**
 * A fixture file (a name in `dir`, or a path) as a replay input: the history and the workflow id it was
 * recorded under, or the file's name for a history that does not say.
 */
export function readFixture(file: string, dir = FIXTURES_DIR): { history: History; workflowId: string } {
  const history = historyFromFixtureJSON(fs.readFileSync(path.resolve(dir, file), 'utf8'));
  return { history, workflowId: historyWorkflowId(history) ?? path.basename(file, '.json') };
}

/** The fixture files of `dir`, sorted by name. */
export function listFixtures(dir = FIXTURES_DIR): string[] {
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort();
}

/**
 * The file of run `run` (1-based) of a scenario that ran `runs` times: `[<tag>.]<scenario>.json`, or
 * `[<tag>.]<scenario>-run<N>.json` for each run of a cycle that continued as new. The tag marks a set
 * recorded next to the old one (a patched path), so both stay replayed.
 */
export function fixtureFileName(scenario: string, run: number, runs: number, tag?: string): string {
  return `${tag ? `${tag}.` : ''}${scenario}${runs > 1 ? `-run${run}` : ''}.json`;
}

/**
 * Whether `file` is one of a scenario's files in the set of `tag` (untagged when absent), of any run, its
 * partitions' (`<scenario>-partition<N>`) included.
 */
export function isScenarioFixture(file: string, scenario: string, tag?: string): boolean {
  return new RegExp(`^${escapeRegExp(`${tag ? `${tag}.` : ''}${scenario}`)}(-partition\\d+)?(-run\\d+)?\\.json$`).test(
    file,
  );
}

/** A fixture's name without its set's tag and `.json`: `normal`, `continued-as-new-run1`. */
export function fixtureRunName(file: string): string {
  return file
    .replace(/\.json$/, '')
    .split('.')
    .pop()!;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
