/**
 * The production profile's Temporal server program (ops/temporal/server) is the server release the stack
 * names: its go.mod requires that release of the server library, and compose's image of it builds on the
 * official image of the same release.
 */
import fs from 'node:fs';
import path from 'node:path';
import { SERVER_SOURCE, TEMPORAL_SERVER_VERSION } from '../../scripts/stack/temporal-server';

describe('ops/temporal/server', () => {
  it(`requires go.temporal.io/server ${TEMPORAL_SERVER_VERSION}, and its Dockerfile builds on that release`, () => {
    const goMod = fs.readFileSync(path.join(SERVER_SOURCE, 'go.mod'), 'utf8');
    expect(goMod).toMatch(
      new RegExp(`^\\s*go\\.temporal\\.io/server ${TEMPORAL_SERVER_VERSION.replace(/\./g, '\\.')}$`, 'm'),
    );
    const dockerfile = fs.readFileSync(path.join(SERVER_SOURCE, 'Dockerfile'), 'utf8');
    expect(dockerfile).toContain(`ARG SERVER_IMAGE=temporalio/server:${TEMPORAL_SERVER_VERSION.slice(1)}\n`);
    const compose = fs.readFileSync(path.resolve(__dirname, '../../docker-compose.yml'), 'utf8');
    expect(compose).toContain(`image: expiry-reminder-temporal-server:${TEMPORAL_SERVER_VERSION.slice(1)}\n`);
  });
});
