// Refuses to go on under a Node.js older than package.json's `engines` (">=24"): one line saying
// so and exit 1, before anything runs on it that would fail with a stack trace somewhere inside.
// Imported first by the `coral-node` command; `npm start`, `npm test` and `npm run test:unit` run
// it alone (`npm ci` refuses on its own: .npmrc sets engine-strict).
import { readFileSync } from 'node:fs';

const { engines } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const wanted = Number(/^>=\s*(\d+)/.exec(engines.node)?.[1]);
if (!(Number(process.versions.node.split('.')[0]) >= wanted)) {
  process.stderr.write(
    `coral: needs Node.js ${wanted} or newer (${engines.node}); this is ${process.version}. ` +
      'Install Node.js 24 or 26 LTS and run again.\n',
  );
  process.exit(1);
}
