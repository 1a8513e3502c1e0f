/**
 * docs/api.md names every export of the package's entries (the root and
 * `nestjs-echo-stream/microservices`), each on a line of its own with its kind and stability, and
 * names nothing else as an export: a new export without its line fails, and so does a line left
 * behind by a removed one. The exports are read from lib/index.ts and lib/microservices/index.ts by
 * the TypeScript compiler (what `export *` brings in included), not listed here by hand.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';

const ROOT = process.cwd();
const ENTRIES = ['lib/index.ts', 'lib/microservices/index.ts'].map((e) => path.join(ROOT, e));
const DOC = 'docs/api.md';

/** The kinds a line may give: those of a value, and those of a type only. */
const VALUE_KINDS = ['class', 'function', 'const'];
const TYPE_KINDS = ['interface', 'type'];
const STABILITY = /^(stable|experimental)\b/;

interface Export {
  name: string;
  /** Has a runtime value (a class, function or const), not only a type. */
  value: boolean;
}

/** Every export of the package's entries, as the compiler resolves it. */
function packageExports(): Export[] {
  const config = ts.getParsedCommandLineOfConfigFile(
    path.join(ROOT, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  );
  const program = ts.createProgram(ENTRIES, { ...config!.options, noEmit: true });
  const checker = program.getTypeChecker();
  return ENTRIES.flatMap((entry) => {
    const module = checker.getSymbolAtLocation(program.getSourceFile(entry)!)!;
    return checker.getExportsOfModule(module).map((symbol) => {
      const target =
        symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      return { name: symbol.name, value: (target.flags & ts.SymbolFlags.Value) !== 0 };
    });
  });
}

interface ExportLine {
  line: number;
  name: string;
  kind: string;
  stability: string;
}

/**
 * The table rows of the page that document an export: `| \`Name\` | kind | what | stability |`
 * (a row whose second cell is a kind; other tables of the page have none there).
 */
function exportLines(text: string): ExportLine[] {
  return text.split('\n').flatMap((raw, i) => {
    const cells = raw.split(/(?<!\\)\|/).map((cell) => cell.trim());
    const name = /^`(\w+)`$/.exec(cells[1] ?? '')?.[1];
    const kind = cells[2] ?? '';
    if (!raw.startsWith('|') || !name || ![...VALUE_KINDS, ...TYPE_KINDS].includes(kind)) return [];
    return [{ line: i + 1, name, kind, stability: cells[cells.length - 2] ?? '' }];
  });
}

describe(`${DOC}: the public API written down`, () => {
  const exports = packageExports();
  const text = fs.readFileSync(path.join(ROOT, DOC), 'utf8');
  const lines = exportLines(text);

  it('reads the exports of both entries', () => {
    // a reader that found nothing would pass vacuously
    expect(exports.length).toBeGreaterThan(80);
    expect(exports.map((e) => e.name)).toEqual(
      expect.arrayContaining([
        'EchoStreamModule',
        'StreamHandler',
        'StreamMessage',
        'EchoStreamServer',
      ]),
    );
  });

  it('names every export in backticks', () => {
    const missing = exports.filter((e) => !text.includes(`\`${e.name}\``)).map((e) => e.name);
    expect(missing).toEqual([]);
  });

  it('gives every export one line with its kind and its stability', () => {
    const problems = exports.flatMap(({ name, value }) => {
      const mine = lines.filter((l) => l.name === name);
      if (mine.length !== 1) return [`${name}: ${mine.length} lines (one expected)`];
      const [{ line, kind, stability }] = mine;
      const kinds = value ? VALUE_KINDS : TYPE_KINDS;
      return [
        ...(kinds.includes(kind)
          ? []
          : [`${DOC}:${line} ${name}: kind '${kind}', not one of ${kinds.join(', ')}`]),
        ...(STABILITY.test(stability) ? [] : [`${DOC}:${line} ${name}: stability '${stability}'`]),
      ];
    });
    expect(problems).toEqual([]);
  });

  it('names no export the package does not have', () => {
    const names = new Set(exports.map((e) => e.name));
    expect(
      lines.filter((l) => !names.has(l.name)).map((l) => `${DOC}:${l.line} ${l.name}`),
    ).toEqual([]);
  });
});
