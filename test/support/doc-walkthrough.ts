import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One `sh` block of a walk-through in the docs, with the lines the `text` block after it says it prints. */
export interface WalkthroughStep {
  /** The commands of the block, as pasted. */
  script: string;
  /** The printed lines; `…` stands for anything. */
  expected: string[];
}

const ROOT = join(__dirname, '../..');

/**
 * The `sh` blocks of a section of a Markdown file of this repository (`file` from the root), each
 * with the `text` block that follows it. The section runs from the `heading` line to the next
 * heading of the same level or above.
 */
export function walkthroughSteps(file: string, heading: string): WalkthroughStep[] {
  const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
  const start = lines.indexOf(heading);
  if (start < 0) throw new Error(`${file} has no heading "${heading}"`);
  const level = heading.indexOf(' ');
  let fenced = false;
  let end = start + 1;
  for (; end < lines.length; end++) {
    if (lines[end].startsWith('```')) fenced = !fenced;
    const match = fenced ? null : /^(#+) /.exec(lines[end]);
    if (match && match[1].length <= level) break;
  }
  const section = lines.slice(start, end).join('\n');
  const blocks = [...section.matchAll(/```(sh|text)\n([\s\S]*?)```/g)].map(([, kind, text]) => ({ kind, text }));
  return blocks.flatMap((block, i) =>
    block.kind === 'sh'
      ? [
          {
            script: block.text,
            expected: (blocks[i + 1]?.kind === 'text' ? blocks[i + 1].text : '').split('\n').filter(Boolean),
          },
        ]
      : [],
  );
}

/** A line of a walk-through's expected output as a pattern: literal text, `…` for anything. */
export const walkthroughLinePattern = (line: string): RegExp =>
  new RegExp(
    `^${line
      .split('…')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*?')}$`,
  );
