/* The copy button on an executed notebook's code cells: mkdocs-jupyter writes a
 * `<clipboard-copy for="cell-N">` with a hidden "Copied!" notice, and ships its element as an
 * inline script in each page (with a Mermaid loader that imports from a CDN). The build drops
 * those scripts (widgets/build/widget_blocks.py), so every page runs the book's own code only;
 * the element is defined here, once per visit, which also covers instant navigation. */

function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
  // a class's server on plain http has no Clipboard API: select a copy and ask the browser
  var node = document.createElement("textarea");
  node.value = text;
  node.setAttribute("readonly", "");
  node.style.position = "fixed";
  node.style.opacity = "0";
  document.body.appendChild(node);
  node.select();
  var done = document.execCommand("copy");
  node.remove();
  return done ? Promise.resolve() : Promise.reject(new Error("the browser refused to copy"));
}

function copy(button) {
  var source = document.getElementById(button.getAttribute("for") || "");
  if (!source) return;
  copyText(source.textContent).then(function () {
    var notice = button.querySelector(".notice");
    if (!notice) return;
    notice.hidden = false;
    setTimeout(function () { notice.hidden = true; }, 1000);
  }, function (err) { console.warn(err); });
}

export function defineClipboardCopy() {
  if (!window.customElements || window.customElements.get("clipboard-copy")) return;
  window.customElements.define("clipboard-copy", class extends HTMLElement {
    connectedCallback() {
      if (!this.hasAttribute("role")) this.setAttribute("role", "button");
      if (!this.hasAttribute("tabindex")) this.setAttribute("tabindex", "0");
      if (this.twBound) return;
      this.twBound = true;
      this.addEventListener("click", function () { copy(this); });
      this.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          copy(this);
        }
      });
    }
  });
}
