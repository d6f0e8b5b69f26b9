// Both entries through both loaders: the ESM loader sees every export the CommonJS one does, and
// `@sluice/client/nest` holds the very classes of `@sluice/client`.
import { createRequire } from 'node:module';
import * as imported from '@sluice/client';
import * as importedNest from '@sluice/client/nest';

const require = createRequire(import.meta.url);
const required = require('@sluice/client');
const requiredNest = require('@sluice/client/nest');
console.log(
  JSON.stringify({
    required: Object.keys(required).sort(),
    imported: Object.keys(imported)
      .filter((name) => name !== 'default')
      .sort(),
    requiredNest: Object.keys(requiredNest).sort(),
    importedNest: Object.keys(importedNest)
      .filter((name) => name !== 'default')
      .sort(),
    sameSluice: imported.Sluice === required.Sluice && importedNest.Sluice === required.Sluice,
  }),
);
