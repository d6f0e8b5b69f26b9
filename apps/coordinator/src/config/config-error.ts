/** One bad setting: the variable and what is wrong with it. */
export interface ConfigProblem {
  variable: string;
  message: string;
}

/** Configuration that stops the service at boot; the message names every bad variable. */
export class ConfigError extends Error {
  readonly problems: readonly ConfigProblem[];

  constructor(variable: string, message: string);
  constructor(problems: readonly ConfigProblem[]);
  constructor(variableOrProblems: string | readonly ConfigProblem[], message = '') {
    const problems =
      typeof variableOrProblems === 'string' ? [{ variable: variableOrProblems, message }] : variableOrProblems;
    super(problems.map((problem) => `${problem.variable}: ${problem.message}`).join('; '));
    this.name = 'ConfigError';
    this.problems = problems;
  }

  /** The first bad variable. */
  get variable(): string {
    return this.problems[0].variable;
  }
}
