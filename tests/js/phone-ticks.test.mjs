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

test("a log axis over a decade or more is labelled at powers of ten only", async () => {
  const { logTicks, TICK_ROOM_PX } = await import("../../widgets/runtime/theme.js");
  // plotly.js labels whole decades when (decades spanned) / nticks > 0.7
  const over = (axis, values, px) => {
    const t = logTicks(axis, values, px);
    return t && (Math.log10(Math.max(...values) / Math.min(...values)) / t.nticks);
  };
  assert.ok(over({ type: "log" }, [1, 1e3], 700) > 0.7);           // "2 5 2 5" before
  assert.ok(over({ type: "log" }, [0.5, 30, 4e4], 160) > 0.7);      // a narrow panel
  const r = logTicks({ type: "log", range: [-0.4, 3.7] }, [], 700);  // decode_roofline's x
  assert.ok(4.1 / r.nticks > 0.7);
  // under a decade: no more labels than the axis has room for ("100 120" touched)
  assert.deepEqual(logTicks({ type: "log" }, [100, 150], 150), { nticks: 2 });
  assert.equal(logTicks({ type: "log" }, [100, 150], 10 * TICK_ROOM_PX).nticks, 10);
  // an axis that names its ticks, or is not a log axis, is left alone
  assert.equal(logTicks({ type: "log", dtick: 1 }, [1, 1e3], 700), null);
  assert.equal(logTicks({ type: "log", tickvals: [1, 10] }, [1, 1e3], 700), null);
  assert.equal(logTicks({ type: "linear" }, [1, 1e3], 700), null);
});
