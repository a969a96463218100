// plotly.js with only the trace types the book draws, built from plotly.js's own source.
//
//   node widgets/build/plotly_bundle.mjs OUT.js
//
// The published bundles either lack a trace the book uses (basic has no heatmap) or carry many
// it never draws (cartesian: box, violin, pie, contour, histograms, ternary...), and plotly.js is
// most of a chapter's first load. TRACES is the whole list: the build refuses a figure whose
// trace type is not in it (widgets/build/assets.py reads it from the bundle's header).
// The settings are those plotly.js builds its own dist files with (esbuild-config.js and
// tasks/util/bundle_wrapper.mjs in its repository): an IIFE that sets the global `Plotly`,
// `global` as `window`, ES2016, minified, and the attributes' documentation strings (which only
// Plotly.PlotSchema reads) left out of the source as it loads.
import { build } from "esbuild";
import { readFile, writeFile, mkdir } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import * as acorn from "acorn";
import * as walk from "acorn-walk";

export const TRACES = ["scatter", "bar", "heatmap"];

const require = createRequire(import.meta.url);
const pkg = JSON.parse(await readFile(require.resolve("plotly.js/package.json"), "utf8"));
const SRC = path.dirname(require.resolve("plotly.js/package.json")) + path.sep + "src" + path.sep;

// Attribute documentation: a `description`, `requiredOpts`, `otherOpts`, `hrName` or `role`
// entry of an object literal whose value is fixed text (a string, a template without
// placeholders, strings joined by `+` or an array of them, or such an array's `.join(...)`).
// plotly.js's build drops the same keys with regular expressions over its source; a parser
// finds them whatever the source's line breaks and quotes.
const DOC_KEYS = new Set(["description", "requiredOpts", "otherOpts", "hrName", "role"]);

function fixedText(node) {
  switch (node.type) {
    case "Literal": return typeof node.value === "string";
    case "TemplateLiteral": return node.expressions.length === 0;
    case "BinaryExpression": return node.operator === "+" && fixedText(node.left) && fixedText(node.right);
    case "ArrayExpression": return node.elements.every((e) => e && fixedText(e));
    case "CallExpression":
      return node.callee.type === "MemberExpression" && !node.callee.computed &&
        node.callee.property.name === "join" && node.callee.object.type === "ArrayExpression" &&
        fixedText(node.callee.object) && node.arguments.every(fixedText);
    default: return false;
  }
}

const COMMA = /\s*,/y;

export function stripDocs(source) {
  const ast = acorn.parse(source, { ecmaVersion: "latest", sourceType: "script" });
  const cuts = [];
  walk.simple(ast, {
    ObjectExpression(obj) {
      for (const prop of obj.properties) {
        const key = prop.type === "Property" && !prop.computed &&
          (prop.key.type === "Identifier" ? prop.key.name : prop.key.value);
        if (DOC_KEYS.has(key) && prop.kind === "init" && !prop.shorthand && fixedText(prop.value)) {
          // the entry and the comma after it, if any
          COMMA.lastIndex = prop.end;
          cuts.push([prop.start, COMMA.test(source) ? COMMA.lastIndex : prop.end]);
        }
      }
    },
  });
  cuts.sort((a, b) => b[0] - a[0]);
  let out = source;
  for (const [from, to] of cuts) out = out.slice(0, from) + out.slice(to);
  return { text: out, count: cuts.length };
}

let stripped = 0;
const stripAttributeDocs = {
  name: "strip-attribute-docs",
  setup(b) {
    b.onLoad({ filter: /[\\/]plotly\.js[\\/]src[\\/].*\.js$/ }, async (args) => {
      const { text, count } = stripDocs(await readFile(args.path, "utf8"));
      stripped += count;
      return { contents: text, loader: "js" };
    });
  },
};

// The only stylesheet plotly.js imports is maplibre's, for map traces this bundle leaves out.
const noCss = {
  name: "no-css",
  setup(b) {
    b.onResolve({ filter: /\.css$/ }, (args) => ({ path: args.path, namespace: "no-css" }));
    b.onLoad({ filter: /.*/, namespace: "no-css" }, () => ({ contents: "", loader: "js" }));
  },
};

const entry = [
  `var Plotly = require("plotly.js/lib/core");`,
  `Plotly.register([${TRACES.filter((t) => t !== "scatter")
    .map((t) => `require("plotly.js/lib/${t}")`).join(", ")}]);`,
  `module.exports = Plotly;`,
].join("\n");

const out = process.argv[2];
if (!out) {
  console.error("usage: node widgets/build/plotly_bundle.mjs OUT.js");
  process.exit(2);
}
const result = await build({
  stdin: { contents: entry, resolveDir: path.dirname(SRC), sourcefile: "book-plotly.js" },
  bundle: true,
  format: "iife",
  globalName: "Plotly",
  minify: true,
  target: "es2016",
  define: { global: "window", "define.amd": "false", "process.env.NODE_DEBUG": "false" },
  alias: { regl: "@plotly/regl", stream: "stream-browserify" },
  plugins: [stripAttributeDocs, noCss],
  write: false,
  logLevel: "warning",
});
const header = `/**\n* plotly.js (the book's traces: ${TRACES.join(", ")} - minified) v${pkg.version}\n` +
  `* Copyright 2012-2026, Plotly, Inc.\n* All rights reserved.\n* Licensed under the MIT license\n*/\n`;
await mkdir(path.dirname(out), { recursive: true });
await writeFile(out, header + result.outputFiles[0].text);
console.log(`${out}: plotly.js ${pkg.version} with ${TRACES.join(", ")}, ` +
  `${result.outputFiles[0].contents.length.toLocaleString("en")} bytes ` +
  `(${stripped.toLocaleString("en")} documentation entries left out)`);
