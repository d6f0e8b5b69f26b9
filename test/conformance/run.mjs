#!/usr/bin/env node
// The conformance suite: every client's driver through every scenario, against two real
// coordinators on a private Redis, one table of results. See README.md.
//
//   node test/conformance/run.mjs [--clients a,b] [--scenarios x,y] [--json results.json] [--verbose]
//                                 [--clients-file other-clients.json]
//
// CONFORMANCE_CLIENTS=a,b selects clients too; CONFORMANCE_ALLOW_MISSING=1 reports a client whose
// toolchain is missing as skipped instead of failed. Exits 1 when any cell fails.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ScriptedDependency } from './harness/dependency.mjs';
import { Fleet } from './harness/fleet.mjs';
import { runScenario } from './harness/scenario.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '../..');

function option(name) {
  const index = process.argv.indexOf(`--${name}`);
  return index < 0 ? undefined : process.argv[index + 1];
}
const list = (text) =>
  text
    ? text
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : undefined;

/** True when `command` is a path that exists or an executable on PATH. */
function found(command) {
  const candidates = command.includes('/')
    ? [resolve(ROOT, command)]
    : (process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, command));
  return candidates.some((path) => {
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

function loadScenarios(only) {
  const dir = join(HERE, 'scenarios');
  const scenarios = readdirSync(dir)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => ({ name: file.replace(/\.json$/, ''), ...JSON.parse(readFileSync(join(dir, file), 'utf8')) }));
  if (!only) return scenarios;
  const unknown = only.filter((name) => !scenarios.some((s) => s.name === name));
  if (unknown.length) throw new Error(`unknown scenarios: ${unknown.join(', ')}`);
  return scenarios.filter((s) => only.includes(s.name));
}

/** The selected clients, each ready to run or with the reason it cannot ({skip} or {broken}). */
function prepareClients(only, file = join(HERE, 'clients.json')) {
  const clients = JSON.parse(readFileSync(file, 'utf8'));
  const unknown = (only ?? []).filter((name) => !clients.some((c) => c.name === name));
  if (unknown.length)
    throw new Error(
      `unknown clients: ${unknown.join(', ')} (clients.json has ${clients.map((c) => c.name).join(', ')})`,
    );
  return clients
    .filter((client) => !only || only.includes(client.name))
    .map((client) => {
      const missing = [...(client.requires ?? []), client.command[0]].find((command) => !found(command));
      if (missing) {
        const why = `${missing} not found`;
        return process.env.CONFORMANCE_ALLOW_MISSING === '1' ? { ...client, skip: why } : { ...client, broken: why };
      }
      const builds = client.build === undefined ? [] : Array.isArray(client.build[0]) ? client.build : [client.build];
      for (const build of builds) {
        process.stderr.write(`conformance: building ${client.name}: ${build.join(' ')}\n`);
        const result = spawnSync(build[0], build.slice(1), { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
        if (result.status !== 0) return { ...client, broken: `build failed: ${build.join(' ')}` };
      }
      return client;
    });
}

function printTable(scenarios, clients, results) {
  const width = 64;
  const cell = (text) => (text.length > width ? `${text.slice(0, width - 1)}…` : text);
  const rows = [['scenario', ...clients.map((c) => c.name)]];
  for (const scenario of scenarios) {
    rows.push([scenario.name, ...clients.map((client) => cell(results.get(`${scenario.name}/${client.name}`).text))]);
  }
  const widths = rows[0].map((_, col) => Math.max(...rows.map((row) => row[col].length)));
  const line = (row) => `| ${row.map((text, col) => text.padEnd(widths[col])).join(' | ')} |`;
  console.log(line(rows[0]));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const row of rows.slice(1)) console.log(line(row));
}

async function main() {
  const scenarios = loadScenarios(list(option('scenarios')));
  const clientsFile = option('clients-file');
  const clients = prepareClients(
    list(option('clients')) ?? list(process.env.CONFORMANCE_CLIENTS),
    clientsFile && resolve(clientsFile),
  );
  const verbose = process.argv.includes('--verbose');
  const results = new Map();
  const runnable = clients.filter((c) => !c.skip && !c.broken);
  let fleet;
  let dependency;
  const started = Date.now();
  try {
    if (runnable.length > 0) {
      fleet = await new Fleet(ROOT).start();
      dependency = await new ScriptedDependency().start();
    }
    for (const scenario of scenarios) {
      for (const client of clients) {
        const key = `${scenario.name}/${client.name}`;
        if (client.skip) {
          results.set(key, { status: 'skipped', text: `skipped (${client.skip})` });
          continue;
        }
        if (client.broken) {
          results.set(key, { status: 'fail', text: `FAIL: ${client.broken}` });
          continue;
        }
        const t0 = Date.now();
        let outcome;
        try {
          outcome = await runScenario({ root: ROOT, fleet, dependency, driver: client, scenario });
        } catch (error) {
          outcome = { pass: false, message: `the harness failed: ${error.message}` };
        }
        const ms = Date.now() - t0;
        results.set(key, {
          status: outcome.pass ? 'pass' : 'fail',
          text: outcome.pass ? 'pass' : `FAIL: ${outcome.message}`,
          message: outcome.message,
          ms,
        });
        process.stderr.write(`conformance: ${key} ${outcome.pass ? 'pass' : `FAIL: ${outcome.message}`} (${ms} ms)\n`);
        if (!outcome.pass && verbose && outcome.run)
          process.stderr.write(
            `--- driver stderr ---\n${outcome.run.stderr}\n--- events ---\n${JSON.stringify(outcome.run.events)}\n--- coordinator traffic ---\n${outcome.run.traffic.map((e) => `${e.at} via ${e.proxy} ${e.method} ${e.path} ${e.fault ?? ''} ${JSON.stringify(e.body ?? '')}`.slice(0, 400)).join('\n')}\n`,
          );
      }
    }
  } finally {
    await dependency?.close();
    await fleet?.stop();
  }
  printTable(scenarios, clients, results);
  const failed = [...results.values()].filter((r) => r.status === 'fail').length;
  console.log(`\n${results.size} runs, ${failed} failed, in ${Math.round((Date.now() - started) / 1000)} s`);
  const json = option('json');
  if (json) writeFileSync(json, JSON.stringify(Object.fromEntries(results), null, 2));
  process.exitCode = failed > 0 ? 1 : 0;
}

main().catch((error) => {
  console.error(`conformance: ${error.stack ?? error}`);
  process.exitCode = 2;
});
