"""For the browser tests (test_explore_browser.py, test_report_browser.py): the error probe,
and the check that nothing runs past its panel's edge."""

# JavaScript run before the page's own: it records every script error, unhandled promise
# rejection, console.error and resource that fails to load in window.__errors.
ERRORS_PROBE = """
window.__errors = [];
window.addEventListener("error", function (e) {
  window.__errors.push("error: " + (e.message || (e.target && (e.target.src || e.target.href))));
}, true);
window.addEventListener("unhandledrejection", function (e) {
  window.__errors.push("rejection: " + e.reason);
});
(function () {
  var original = console.error;
  console.error = function () {
    window.__errors.push("console.error: " + Array.prototype.join.call(arguments, " "));
    return original.apply(console, arguments);
  };
})();
"""

# JavaScript returning every visible element that runs past the left or right edge of the page
# section (or header) that holds it, as "PANEL: TAG#id.class [left, right] outside [l, r]";
# an element inside a box that scrolls or clips (overflow-x auto, scroll, hidden) is its own.
OVERFLOW_PROBE = """
const out = [];
for (const panel of document.querySelectorAll("body > section, body > header")) {
  const box = panel.getBoundingClientRect();
  if (box.width === 0) continue;  // a hidden panel
  for (const e of panel.querySelectorAll("*")) {
    const r = e.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    let clipped = false;
    for (let p = e.parentElement; p && p !== panel; p = p.parentElement) {
      if (["auto", "scroll", "hidden"].includes(getComputedStyle(p).overflowX)) clipped = true;
    }
    if (clipped || (r.right <= box.right + 0.5 && r.left >= box.left - 0.5)) continue;
    const name = e.tagName + (e.id ? "#" + e.id : "") +
      (typeof e.className === "string" && e.className ? "." + e.className : "");
    out.push(`${panel.id || panel.tagName}: ${name} [${Math.round(r.left)}, ${Math.round(r.right)}]`
      + ` outside [${Math.round(box.left)}, ${Math.round(box.right)}]`);
  }
}
return out;
"""
