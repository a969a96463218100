/* Where the vendored scripts the runtime loads sit, relative to the runtime's own folder. The
 * build (widgets/build/assets.py) writes this module anew with each one's content-hashed
 * folder; these are the unhashed paths. */
export const PLOTLY = "../../vendor/plotly/plotly.min.js";
export const KATEX = "../../vendor/katex/katex.min.js";
export const KATEX_AUTO = "../../vendor/katex/contrib/auto-render.min.js";
