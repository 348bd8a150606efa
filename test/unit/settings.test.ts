/**
 * The cycle's settings table (src/domain/settings.ts): for every setting, the worker's variable, a run's input,
 * a continuation and the client's option take the same values and refuse the same, at both bounds.
 */
import { Command, CommanderError } from 'commander';
import { ConfigError, loadConfig } from '../../src/config';
import { ZERO_COUNTS, type CycleDefaults } from '../../src/domain/cycle';
import { resolveCycleSettings } from '../../src/domain/cycle-input';
import { CYCLE_SETTINGS, RUN_SETTINGS, type CycleSettingName } from '../../src/domain/settings';
import { buildProgram } from '../../src/client';

const DEFAULTS: CycleDefaults = loadConfig({}).cycle;
const NOW = new Date('2026-06-01T21:00:00.000Z');
const AT = { defaultAsOf: new Date('2026-06-01T03:00:00.000Z'), now: NOW };

/** Whether the worker's variable of `name` takes `value` (a duration in milliseconds, written as such). */
function variableTakes(name: CycleSettingName, value: number): boolean {
  const setting = CYCLE_SETTINGS[name] as { variable?: string; duration?: boolean };
  if (!setting.variable) throw new Error(`${name} has no variable`);
  try {
    loadConfig({ [setting.variable]: setting.duration ? `${value}ms` : String(value) });
    return true;
  } catch (err) {
    if (err instanceof ConfigError) return false;
    throw err;
  }
}

/** Whether a run's input takes `value` for `name` (a retention only equal to the worker's). */
const runTakes = (name: CycleSettingName, value: number) =>
  resolveCycleSettings(
    { ...DEFAULTS, ...(name === 'retentionDays' ? { retentionDays: value } : {}) },
    { [name]: value },
    AT,
  ).ok;

/** Whether a continuation carrying `value` for `name` in its settings is taken. */
function continuationTakes(name: CycleSettingName, value: number): boolean {
  const first = resolveCycleSettings(DEFAULTS, {}, AT);
  if (!first.ok) throw new Error('the defaults are refused');
  const continuation = {
    settings: { ...first.settings, [name]: value },
    startedAtMs: AT.defaultAsOf.getTime(),
    counts: { ...ZERO_COUNTS },
    runs: 2,
    busyOwnerIds: [],
  };
  return resolveCycleSettings(DEFAULTS, { continuation }, AT).ok;
}

/** The client's options that set a cycle setting, by the command that has them. */
const OPTIONS: { name: CycleSettingName; command: string[]; option: string }[] = [
  { name: 'partitions', command: ['cycle', 'run'], option: '--partitions' },
  { name: 'partitions', command: ['schedule', 'apply'], option: '--partitions' },
  { name: 'pagesPerClaim', command: ['cycle', 'run'], option: '--pages-per-claim' },
  { name: 'retentionDays', command: ['cycle', 'preview'], option: '--retention-days' },
];

/** Whether the client's `option` of `command` takes `value` (parsed only: the action never runs). */
function optionTakes(command: string[], option: string, value: number): boolean {
  const program = buildProgram(() => {
    throw new Error('parsed only');
  });
  const silence = (c: Command) => {
    c.configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
    c.commands.forEach(silence);
  };
  silence(program);
  try {
    const leaf = command.reduce((c: Command, name) => c.commands.find((s) => s.name() === name)!, program);
    leaf.action(() => undefined);
    program.parse([...command, option, String(value)], { from: 'user' });
    return true;
  } catch (err) {
    if (err instanceof CommanderError && err.code === 'commander.invalidArgument') return false;
    throw err;
  }
}

describe.each(Object.keys(CYCLE_SETTINGS) as CycleSettingName[])('setting %s', (name) => {
  const { min, max } = CYCLE_SETTINGS[name];
  const inside = [min, Math.min(max, min + 1), max];
  const outside = [min - 1, ...(max < Number.MAX_SAFE_INTEGER ? [max + 1] : [])];
  const setting = CYCLE_SETTINGS[name] as { variable?: string; run: string; duration?: boolean };

  if (setting.variable) {
    it(`its variable ${setting.variable} takes ${min} to ${max}, and not past them`, () => {
      // A duration's variable has a tighter upper bound of its own: below the scheduled cycles' execution timeout.
      const taken = setting.duration ? inside.filter((v) => v < max) : inside;
      for (const v of taken) expect([v, variableTakes(name, v)]).toEqual([v, true]);
      for (const v of outside) expect([v, variableTakes(name, v)]).toEqual([v, false]);
    });
  }

  if (setting.run !== 'no') {
    it('a run and a continuation take the same bounds', () => {
      expect(RUN_SETTINGS).toContain(name);
      for (const v of inside) expect([v, runTakes(name, v), continuationTakes(name, v)]).toEqual([v, true, true]);
      for (const v of outside) expect([v, runTakes(name, v), continuationTakes(name, v)]).toEqual([v, false, false]);
    });
  } else {
    it("is the worker's alone: a run's input that sets it is refused", () => {
      expect(RUN_SETTINGS).not.toContain(name);
      expect(resolveCycleSettings(DEFAULTS, { [name]: min }, AT).ok).toBe(false);
    });
  }

  for (const { command, option } of OPTIONS.filter((o) => o.name === name)) {
    it(`the client's ${command.join(' ')} ${option} takes the same bounds`, () => {
      for (const v of inside) expect([v, optionTakes(command, option, v)]).toEqual([v, true]);
      for (const v of outside) expect([v, optionTakes(command, option, v)]).toEqual([v, false]);
    });
  }
});

it('every default is inside its bounds, and the worker starts with the defaults', () => {
  for (const [name, s] of Object.entries(CYCLE_SETTINGS) as [
    string,
    { min: number; max: number; default?: number },
  ][]) {
    if (s.default !== undefined) expect([name, s.default >= s.min && s.default <= s.max]).toEqual([name, true]);
  }
  expect(loadConfig({}).cycle).toEqual(expect.objectContaining({ batchSize: CYCLE_SETTINGS.batchSize.default }));
});
