import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** A relative link of a Markdown file that does not lead anywhere. */
export interface BrokenLink {
  /** The file holding the link, from `root`. */
  file: string;
  line: number;
  target: string;
  why: string;
}

/** The Markdown files of `dir` and its folders, from `root`. */
export function markdownFilesUnder(root: string, dir: string): string[] {
  const absolute = join(root, dir);
  if (!existsSync(absolute)) return [];
  return readdirSync(absolute, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.md') && !name.split('/').includes('node_modules'))
    .map((name) => relative(root, join(absolute, name)))
    .sort();
}

/** The file's lines with fenced code blocks blanked (their text is code, not Markdown). */
function proseLines(markdown: string): string[] {
  let fenced = false;
  return markdown.split('\n').map((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return '';
    }
    return fenced ? '' : line;
  });
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
export function headingAnchor(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Every anchor a Markdown file's headings give, a repeated one numbered as GitHub does (`-1`, `-2`). */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseLines(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const anchor = headingAnchor(heading);
    const count = seen.get(anchor) ?? 0;
    seen.set(anchor, count + 1);
    anchors.add(count === 0 ? anchor : `${anchor}-${count}`);
  }
  return anchors;
}

/** The links of a Markdown file (inline links, images and reference definitions), code left out. */
export function linksOf(markdown: string): Array<{ line: number; target: string }> {
  return proseLines(markdown).flatMap((text, i) => {
    const prose = text.replace(/`[^`]*`/g, '');
    const inline = [...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]);
    const reference = /^\s*\[[^\]]+\]:\s+<?(\S+?)>?(?:\s|$)/.exec(prose)?.[1];
    return [...inline, ...(reference === undefined ? [] : [reference])].map((target) => ({ line: i + 1, target }));
  });
}

/**
 * The relative links of `files` (from `root`) that lead to no file, or to a Markdown file without
 * the heading their anchor names. Links with a scheme (https:, mailto:) are not followed.
 */
export function brokenLinks(root: string, files: string[]): BrokenLink[] {
  const anchors = new Map<string, Set<string>>();
  const anchorsIn = (path: string) => {
    if (!anchors.has(path)) anchors.set(path, anchorsOf(readFileSync(path, 'utf8')));
    return anchors.get(path)!;
  };
  return files.flatMap((file) =>
    linksOf(readFileSync(join(root, file), 'utf8')).flatMap(({ line, target }): BrokenLink[] => {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return [];
      const [path, anchor] = target.split('#', 2);
      const destination = path === '' ? join(root, file) : resolve(dirname(join(root, file)), decodeURI(path));
      const broken = (why: string) => [{ file, line, target, why }];
      if (!existsSync(destination)) return broken('no such file');
      if (relative(root, destination).startsWith('..')) return broken('outside the repository');
      if (anchor === undefined || anchor === '') return [];
      if (statSync(destination).isDirectory() || !destination.endsWith('.md'))
        return broken('an anchor on a non-Markdown file');
      return anchorsIn(destination).has(decodeURIComponent(anchor)) ? [] : broken(`no heading #${anchor}`);
    }),
  );
}
