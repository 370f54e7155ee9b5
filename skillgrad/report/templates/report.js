// Small, dependency-free helpers: filter failed tasks and open every trace at once.
// Reads nothing from the run data; all content is already escaped in the HTML.
(function () {
  "use strict";
  var onlyFailed = document.getElementById("only-failed");
  if (onlyFailed) {
    onlyFailed.addEventListener("change", function () {
      document.body.classList.toggle("only-failed", onlyFailed.checked);
    });
  }
  var expand = document.getElementById("expand-traces");
  if (expand) {
    expand.addEventListener("click", function () {
      var boxes = document.querySelectorAll("details.trace-box, details.set");
      var open = expand.getAttribute("data-open") !== "1";
      boxes.forEach(function (box) { box.open = open; });
      expand.setAttribute("data-open", open ? "1" : "0");
      expand.textContent = open ? "collapse all traces" : "expand all traces";
    });
  }
})();
