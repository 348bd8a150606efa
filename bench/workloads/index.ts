/** The workloads `--workload` chooses from. A new workload is a module here, added to WORKLOADS. */
import type { Workload } from '../workload';
import { cycleWorkload, DATA_SHAPES } from './cycle';
import { relayWorkload } from './relay';

export const WORKLOADS: Record<string, Workload> = {
  ...Object.fromEntries(Object.entries(DATA_SHAPES).map(([name, shape]) => [name, cycleWorkload(name, shape)])),
  relay: relayWorkload,
};

/** The workload of that name; an unknown name is refused with the list of known ones. */
export function findWorkload(name: string): Workload {
  const workload = WORKLOADS[name];
  if (!workload) throw new Error(`unknown workload ${name}; one of ${Object.keys(WORKLOADS).join(', ')}`);
  return workload;
}
