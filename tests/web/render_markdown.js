// Test helper: render each {src, opts} of a JSON array read from stdin with
// openprogram_memory/web/markdown.js; print the HTML strings as a JSON array.
"use strict";
const path = require("path");
const md = require(path.resolve(process.argv[2]));
let input = "";
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  const cases = JSON.parse(input);
  const out = cases.map((c) => md.render(c.src, c.opts || {}));
  process.stdout.write(JSON.stringify(out));
});
