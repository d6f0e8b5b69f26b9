/** A line of the README's expected output as a pattern: literal text, `…` for anything. */
export const readmeLinePattern = (line: string): RegExp =>
  new RegExp(
    `^${line
      .split('…')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*?')}$`,
  );
