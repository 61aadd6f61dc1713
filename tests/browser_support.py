"""For the browser tests (test_explore_browser.py, test_report_browser.py): the error probe."""

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
