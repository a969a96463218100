// A widget's setting in the page's URL (widgets/runtime/url-state.js), on the attention-map
// widget's own spec (tests/js/cases/spec.json): its layer's range follows the model.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { check } from "../../widgets/runtime/spec.js";
import { fromQuery, readSetting, settingLink, writeSetting } from
  "../../widgets/runtime/url-state.js";

const { specs } = JSON.parse(readFileSync(new URL("./cases/spec.json", import.meta.url), "utf8"));
const spec = specs.attention_map;
const labels = Object.fromEntries(spec.params.map((p) => [p.name, p.label]));
const opening = Object.fromEntries(spec.params.map((p) => [p.name, p.default]));
const param = (name) => spec.params.find((p) => p.name === name);

test("a link's values are read in the param's type", () => {
  assert.equal(fromQuery(param("layer"), "3"), 3);
  assert.equal(fromQuery(param("layer"), " "), " ");   // check names it: not a number
  assert.equal(fromQuery(param("layer"), "x"), "x");
  assert.equal(fromQuery(param("average"), "0"), false);
  assert.equal(fromQuery(param("average"), "true"), true);
  assert.equal(fromQuery(param("average"), "yes"), "yes");
  assert.equal(fromQuery(param("model"), "book"), "book");
});

test("a link's valid values are taken, for this instance's keys only", () => {
  const search = "?attention_map.model=smollm2&attention_map.average=false&attention_map.layer=20" +
    "&attention_map.2.layer=3&other=1";
  const got = readSetting(spec, "attention_map", search, opening, labels, opening);
  assert.deepEqual(got, { params: { ...opening, model: "smollm2", average: false, layer: 20 },
                          found: true, ignored: [] });
  const none = readSetting(spec, "attention_map", "?other=1", opening, labels, opening);
  assert.deepEqual(none, { params: opening, found: false, ignored: [] });
});

test("an invalid value is ignored, in the words the server would use", () => {
  const search = "?attention_map.average=false&attention_map.layer=9";
  const got = readSetting(spec, "attention_map", search, opening, labels, opening);
  const trial = { ...opening, average: false, layer: 9 };
  assert.deepEqual(got.ignored, [check(param("layer"), 9, trial, labels)]);
  assert.match(got.ignored[0], /^'.*' must be from 0 to 3 when .* is book/);
  assert.equal(got.params.layer, opening.layer);
  assert.equal(got.found, true);
});

test("a value a later rule refuses goes back to the opening setting's", () => {
  // layer 20 was allowed under SmolLM2; the link then sets the book's model (4 layers)
  const start = { ...opening, model: "smollm2", average: false, layer: 20 };
  const got = readSetting(spec, "attention_map", "?attention_map.model=book", start, labels,
                          opening);
  assert.equal(got.params.model, "book");
  assert.equal(got.params.layer, opening.layer);
  assert.equal(got.ignored.length, 1);
  assert.match(got.ignored[0], /^'.*' must be from 0 to 3/);
});

test("writing a setting: its own keys, none at the opening values, the rest of the URL kept", () => {
  const search = "?other=1&attention_map.2.layer=3&attention_map.layer=2";
  const qs = writeSetting(spec, "attention_map", search,
                          { ...opening, model: "smollm2", average: false }, opening);
  assert.deepEqual(Object.fromEntries(new URLSearchParams(qs)),
                   { "other": "1", "attention_map.2.layer": "3", "attention_map.model": "smollm2",
                     "attention_map.average": "false" });
  assert.equal(writeSetting(spec, "attention_map", "", opening, opening), "");
});

test("a setting's link carries its keys and lands on the widget", () => {
  const where = { origin: "https://book.example", pathname: "/chapters/attention-maps/",
                  search: "?attention_map.layer=2&other=1" };
  assert.equal(settingLink(where, "attention_map", "widget-attention_map"),
               "https://book.example/chapters/attention-maps/?attention_map.layer=2" +
               "#widget-attention_map");
  assert.equal(settingLink({ ...where, search: "" }, "attention_map", ""),
               "https://book.example/chapters/attention-maps/");
});
