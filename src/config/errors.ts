// One error class for every refused configuration file (STYLE: one class per failure, with a
// stable `code`), holding every issue found so that the person fixes them in one pass.

/** One problem in a config file. `line` and `column` are 1-based; 0 when the issue concerns the
 * whole file (it does not exist, cannot be read). `path` is "" for the document root. */
export interface ConfigIssue {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly path: string;
  readonly message: string;
}

/** `config/gateway.yaml:12:5: limits.maxNodesPerRead: expected ...` */
export function formatIssue(issue: ConfigIssue): string {
  const where = issue.line > 0 ? `${issue.file}:${issue.line}:${issue.column}` : issue.file;
  return issue.path ? `${where}: ${issue.path}: ${issue.message}` : `${where}: ${issue.message}`;
}

export class ConfigError extends Error {
  static readonly code = "ERR_FIELDGATE_CONFIG";
  readonly code = ConfigError.code;
  readonly issues: readonly ConfigIssue[];

  constructor(issues: readonly ConfigIssue[]) {
    super(issues.map(formatIssue).join("\n"));
    this.name = "ConfigError";
    this.issues = issues;
  }
}
