#!/usr/bin/env node
/**
 * Run the sample origin as a process (the docker-compose `origin` service, `npm run fleet`):
 * `ORIGIN_HOST` (default 0.0.0.0), `ORIGIN_PORT` (default 8080), `ORIGIN_OBJECTS`,
 * `ORIGIN_OBJECT_BYTES`. Prints one JSON line when listening; stops on SIGTERM/SIGINT.
 */
import { SampleOrigin } from './origin.js';

const env = process.env;
const origin = new SampleOrigin({
  host: env.ORIGIN_HOST ?? '0.0.0.0',
  port: Number(env.ORIGIN_PORT ?? 8080),
  objects: env.ORIGIN_OBJECTS ? Number(env.ORIGIN_OBJECTS) : undefined,
  objectBytes: env.ORIGIN_OBJECT_BYTES ? Number(env.ORIGIN_OBJECT_BYTES) : undefined,
});
const addr = await origin.listen();
process.stdout.write(JSON.stringify({ msg: 'sample origin listening', ...addr }) + '\n');
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => void origin.close().then(() => process.exit(0)));
}
