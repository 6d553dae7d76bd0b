// The task table: filters by value, search by task id, pages of rows. Every row is data in rows.js (the page holds
// only the first page of them), so a run of 10,000 rollouts opens as fast as one of 10. No network, no libraries;
// text goes in as text, never as HTML.
(function () {
  "use strict";
  var form = document.getElementById("filters");
  var table = document.getElementById("rollout-table");
  var data = window.ROLLOUT_ROWS;
  if (!form || !table || !data) { return; }
  var column = {};
  data.columns.forEach(function (name, i) { column[name] = i; });
  var body = table.tBodies[0];
  var shown = document.getElementById("shown");
  var at = document.getElementById("page-at");
  var previous = document.getElementById("page-previous");
  var next = document.getElementById("page-next");
  var controls = Array.prototype.slice.call(form.querySelectorAll("[data-filter]"));
  var NONE = "\u2013";
  var page = 0;
  var matches = data.rows;

  function count(n) { return n === null ? NONE : Math.round(n).toLocaleString("en-US"); }
  function usd(x) { return x === null ? NONE : "$" + x.toFixed(4); }
  function fixed(x, digits) { return x === null ? NONE : x.toFixed(digits); }

  function cell(row, text, className) {
    var td = row.insertCell();
    td.textContent = text;
    if (className) { td.className = className; }
    return td;
  }

  function rowOf(r) {
    var value = function (name) { return r[column[name]]; };
    var tr = document.createElement("tr");
    var cover = tr.insertCell();
    if (value("cover")) {
      var img = document.createElement("img");
      img.className = "cover";
      img.loading = "lazy";
      img.src = encodeURI(value("cover"));
      img.alt = "first slide of " + value("task_id");
      cover.appendChild(img);
    }
    var link = document.createElement("a");
    link.href = "rollouts/" + encodeURIComponent(value("task_id")) + ".html";
    link.textContent = value("task_id");
    tr.insertCell().appendChild(link);
    ["source", "language", "aspect", "slides_asked"].forEach(function (name) { cell(tr, value(name)); });
    var status = cell(tr, value("status"), "status-" + value("status"));
    if (value("failure")) {
      var why = document.createElement("div");
      why.className = "small muted";
      why.textContent = value("failure");
      status.appendChild(why);
    }
    cell(tr, value("category"), "cat-" + String(value("category")).replace(/ /g, "-"));
    ["slides", "defects", "injections", "steps"].forEach(function (name) { cell(tr, value(name), "num"); });
    cell(tr, count(value("tokens")), "num");
    cell(tr, usd(value("cost_usd")), "num");
    cell(tr, fixed(value("wall_s"), 1), "num");
    return tr;
  }

  function draw() {
    var pages = Math.max(1, Math.ceil(matches.length / data.page));
    page = Math.min(page, pages - 1);
    var fresh = document.createElement("tbody");
    matches.slice(page * data.page, (page + 1) * data.page).forEach(function (r) { fresh.appendChild(rowOf(r)); });
    table.replaceChild(fresh, body);
    body = fresh;
    shown.textContent = matches.length + " of " + data.rows.length + " rollouts";
    at.textContent = "page " + (page + 1) + " of " + pages;
    previous.disabled = page === 0;
    next.disabled = page >= pages - 1;
    previous.hidden = next.hidden = at.hidden = pages === 1;
  }

  function apply() {
    var wanted = controls.map(function (c) { return [c.getAttribute("data-filter"), c.value.trim()]; })
      .filter(function (pair) { return pair[1] !== ""; });
    matches = data.rows.filter(function (r) {
      return wanted.every(function (pair) {
        var value = String(r[column[pair[0] === "task" ? "task_id" : pair[0]]]);
        return pair[0] === "task" ? value.indexOf(pair[1]) !== -1 : value === pair[1];
      });
    });
    page = 0;
    draw();
  }

  previous.addEventListener("click", function () { page -= 1; draw(); });
  next.addEventListener("click", function () { page += 1; draw(); });
  controls.forEach(function (c) { c.addEventListener(c.tagName === "SELECT" ? "change" : "input", apply); });
  apply();
}());
