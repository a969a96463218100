/* The DOM helpers every part of the runtime shares. */

export function el(tag, attrs, text) {
  var node = document.createElement(tag);
  Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
  if (text !== undefined) node.textContent = text;
  return node;
}

/* A vendored classic script (plotly.js, KaTeX), added to <head>: resolves once it has run. One
 * that fails to load is taken out again, so the next ask tries afresh. */
export function loadScript(href) {
  return new Promise(function (resolve, reject) {
    var s = el("script", { src: href });  // inserted by code: async, never blocks the page
    s.onload = resolve;
    s.onerror = function () { s.remove(); reject(new Error(href + " did not load")); };
    document.head.appendChild(s);
  });
}

/* The JSON blocks the build put in the page's content sit in `<template class="tw-data">`
 * (widgets/build/widget_blocks.py data_block): Material's instant navigation runs every
 * `<script>` of the content it swaps in again as code, JSON ones included, and leaves a
 * template's content alone. These are the blocks under `root` that match `selector`. */
export function dataBlocks(root, selector) {
  var found = [];
  root.querySelectorAll("template.tw-data").forEach(function (t) {
    t.content.querySelectorAll(selector).forEach(function (node) { found.push(node); });
  });
  return found;
}
