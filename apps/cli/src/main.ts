#!/usr/bin/env node
import { run } from './program';

// `sluice deps | head`: a reader that stops early is not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  process.exit(process.exitCode ?? 0);
});

void run(process.argv).then((code) => {
  process.exitCode = code;
});
