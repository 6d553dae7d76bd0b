// The task table's filters: hide the rows that do not match every chosen value. No network, no libraries.
(function () {
  "use strict";
  var form = document.getElementById("filters");
  var table = document.getElementById("rollout-table");
  if (!form || !table) { return; }
  var rows = Array.prototype.slice.call(table.tBodies[0].rows);
  var shown = document.getElementById("shown");
  var controls = Array.prototype.slice.call(form.querySelectorAll("[data-filter]"));

  function apply() {
    var wanted = controls.map(function (c) { return [c.getAttribute("data-filter"), c.value.trim()]; })
      .filter(function (pair) { return pair[1] !== ""; });
    var visible = 0;
    rows.forEach(function (row) {
      var match = wanted.every(function (pair) {
        var value = row.getAttribute("data-" + pair[0]) || "";
        return pair[0] === "task" ? value.indexOf(pair[1]) !== -1 : value === pair[1];
      });
      row.classList.toggle("hidden", !match);
      if (match) { visible += 1; }
    });
    shown.textContent = visible + " of " + rows.length + " rollouts";
  }

  controls.forEach(function (c) { c.addEventListener(c.tagName === "SELECT" ? "change" : "input", apply); });
  apply();
}());
