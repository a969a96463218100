// On a phone no tick label is under 11 px (ux review P12: multi_head's and attention_map's 9 px
// labels): narrowFigure raises a smaller size the figure or its phone patch asks for, on every
// axis and colour bar, and leaves larger ones alone.
import assert from "node:assert/strict";
import { test } from "node:test";

import { MIN_TICK_PX, narrowFigure } from "../../widgets/runtime/theme.js";

test("tick labels of 9 px become 11 px in the phone layout", () => {
  const fig = {
    data: [{ type: "heatmap", z: [[1]], colorbar: { tickfont: { size: 8 } } }],
    layout: { xaxis: { tickfont: { size: 9, color: "red" } }, yaxis2: { tickfont: { size: 14 } },
              coloraxis: { colorbar: { tickfont: { size: 9 } } } },
    narrow: { yaxis: { tickfont: { size: 9 } } },
  };
  const { data, layout } = narrowFigure(fig);
  assert.equal(MIN_TICK_PX, 11);
  assert.deepEqual(layout.xaxis.tickfont, { size: 11, color: "red" });
  assert.equal(layout.yaxis.tickfont.size, 11);
  assert.equal(layout.yaxis2.tickfont.size, 14);
  assert.equal(layout.coloraxis.colorbar.tickfont.size, 11);
  assert.equal(data[0].colorbar.tickfont.size, 11);
  assert.equal(fig.layout.xaxis.tickfont.size, 9);  // the figure itself is not changed
});
