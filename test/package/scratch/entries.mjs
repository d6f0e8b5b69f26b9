// Both entries through both loaders: the ESM loader sees every export the CommonJS one does, and
// `@sluice/client/nest` holds the very classes of `@sluice/client`. The ESM namespace of a CommonJS
// module also names `default` and, from Node 23 on, `module.exports` (the exports object itself).
import { createRequire } from 'node:module';
import * as imported from '@sluice/client';
import * as importedNest from '@sluice/client/nest';

const require = createRequire(import.meta.url);
const exportNames = (namespace) =>
  Object.keys(namespace)
    .filter((name) => name !== 'default' && name !== 'module.exports')
    .sort();
const required = require('@sluice/client');
const requiredNest = require('@sluice/client/nest');
console.log(
  JSON.stringify({
    required: Object.keys(required).sort(),
    imported: exportNames(imported),
    requiredNest: Object.keys(requiredNest).sort(),
    importedNest: exportNames(importedNest),
    sameSluice: imported.Sluice === required.Sluice && importedNest.Sluice === required.Sluice,
  }),
);
