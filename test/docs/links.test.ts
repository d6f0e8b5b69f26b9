import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { anchorsOf, brokenLinks, markdownFilesUnder } from '../support/doc-links';

const ROOT = join(__dirname, '../..');

/** The repository's own documents: the README, docs/, each package's and app's README, deploy/. */
const DOCUMENTS = [
  'README.md',
  ...markdownFilesUnder(ROOT, 'docs'),
  ...markdownFilesUnder(ROOT, 'libs').filter((file) => file.endsWith('/README.md')),
  ...markdownFilesUnder(ROOT, 'apps').filter((file) => file.endsWith('/README.md')),
  ...markdownFilesUnder(ROOT, 'deploy'),
];

describe('the links of the documentation', () => {
  it('covers the README, docs/ and the packages', () => {
    expect(DOCUMENTS).toEqual(
      expect.arrayContaining(['README.md', 'docs/operations.md', 'docs/console.md', 'libs/client/README.md']),
    );
  });

  it('every relative link leads to a file, and every anchor to a heading of it', () => {
    expect(brokenLinks(ROOT, DOCUMENTS)).toEqual([]);
  });
});

describe('the link check', () => {
  let dir: string;
  const write = (files: Record<string, string>) => {
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      writeFileSync(join(dir, name), text);
    }
  };
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'sluice-links-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('names a missing file, a missing heading and a missing anchor of the same file', () => {
    write({
      'README.md': [
        '# Top',
        'See [ops](docs/ops.md#the-sluice-cli), [gone](docs/gone.md), [cli](docs/ops.md#no-such-part),',
        '![shot](docs/shot.png), [here](#top), [there](#elsewhere) and [web](https://example.com/x.md).',
        '```sh',
        'echo [not a link](nowhere.md)',
        '```',
      ].join('\n'),
      'docs/ops.md': '# Operations\n\n## The `sluice` CLI\n\nBack to [the top](../README.md#top).\n',
      'docs/shot.png': '',
    });
    expect(brokenLinks(dir, ['README.md', 'docs/ops.md'])).toEqual([
      { file: 'README.md', line: 2, target: 'docs/gone.md', why: 'no such file' },
      { file: 'README.md', line: 2, target: 'docs/ops.md#no-such-part', why: 'no heading #no-such-part' },
      { file: 'README.md', line: 3, target: '#elsewhere', why: 'no heading #elsewhere' },
    ]);
  });

  it('reads anchors as GitHub writes them', () => {
    const anchors = anchorsOf(
      "# The SDK's overhead\n## `bench:sdk` (Node 24)\n## Faults\n## Faults\n```\n# not a heading\n```\n",
    );
    expect([...anchors]).toEqual(['the-sdks-overhead', 'benchsdk-node-24', 'faults', 'faults-1']);
  });
});
