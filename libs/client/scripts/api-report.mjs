// npm run check:api: fails when the public surface of `@sluice/client` or `@sluice/client/nest`
// differs from api/client.api.md and api/nest.api.md. `--update` (npm run api:update) rewrites them.
import { ENTRIES, extract, withDeclarations } from './declarations.mjs';

const update = process.argv.includes('--update');
const failed = withDeclarations((typesDir) =>
  ENTRIES.filter((entry) => !extract(entry, typesDir, { report: true, update })).map((entry) => entry.name),
);
if (failed.length > 0) {
  console.error(
    update
      ? `api-extractor failed on ${failed.join(', ')}`
      : `The public API differs from libs/client/api/ (${failed.join(', ')}): review the change, then run npm run api:update and commit the reports.`,
  );
  process.exit(1);
}
