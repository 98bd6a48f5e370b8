// Parses Mermaid diagrams with Mermaid's own parser, headless: mermaid.parse() needs no browser,
// only DOMPurify's window at import, which jsdom gives (mermaid-cli would download a browser).
// Usage: node parse.mjs FILE...   One line per file: "ok <diagram type>" or "error <message>";
// exit 1 when any fails. tests/support/mermaid.py runs it; .ci/run installs package-lock.json (npm ci).
import { readFileSync } from "node:fs";
import { JSDOM } from "jsdom";

const dom = new JSDOM("<!doctype html><html><body></body></html>");
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import("mermaid");
mermaid.initialize({ startOnLoad: false });

let failed = 0;
for (const file of process.argv.slice(2)) {
  try {
    const result = await mermaid.parse(readFileSync(file, "utf8"));
    console.log(`${file}: ok ${result.diagramType}`);
  } catch (error) {
    failed += 1;
    console.log(`${file}: error ${String(error.message ?? error).split("\n").join(" | ")}`);
  }
}
process.exit(failed ? 1 : 0);
