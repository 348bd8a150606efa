/** The workloads `--workload` chooses from. A new workload is a module here, added to WORKLOADS. */
import type { Workload } from '../workload';
import { cycleWorkload, DATA_SHAPES } from './cycle';
import { relayWorkload } from './relay';

const WORKLOADS: Record<string, Workload> = {
  ...Object.fromEntries(Object.entries(DATA_SHAPES).map(([name, shape]) => [name, cycleWorkload(name, shape)])),
  relay: relayWorkload,
};

/** The workload of that name; an unknown name is refused with the list of known ones. */
export function findWorkload(name: string): Workload {
  const workload = WORKLOADS[name];
  if (!workload) throw new Error(`unknown workload ${name}; one of ${Object.keys(WORKLOADS).join(', ')}`);
  return workload;
}

/** The paths a run measures: `--only`'s (each one the workload has, else refused), else the workload's default ones. */
export function chosenPaths(workload: Workload, only?: string[]): Set<string> {
  const paths = new Set(only ?? workload.defaultPaths ?? workload.paths);
  const unknown = [...paths].filter((p) => !workload.paths.includes(p));
  if (unknown.length)
    throw new Error(`unknown path ${unknown.join(', ')}; ${workload.name} has ${workload.paths.join(', ')}`);
  return paths;
}
