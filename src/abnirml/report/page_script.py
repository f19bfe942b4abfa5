"""The report page's one script, and the Content-Security-Policy that runs only it.

The page must work from a file, offline, and show hostile collection text as text: the
policy forbids every request and every script but this one, pinned by its SHA-256 hash, so
neither a ``<script>`` nor an ``onerror=`` smuggled into a document or query could run even
if escaping failed. The script only adds conveniences; without it every section still opens
by its summary and every table is complete:

* in-page links (table of contents, "detail", "samples") open the folded sections around
  their target before the browser scrolls to it;
* tables longer than :data:`CONTROLS_FROM_ROWS` rows get a search box, a selector for each
  Ranker / Family / Significant column, and sorting by a click on a column header — rows
  marked ``small`` (fewer samples than the report trusts) always stay last. In a grouped
  table (a label named on a group's first row only) a blank cell belongs to the group
  above it, read once in the page's order: a filter keeps the whole group, the search
  finds a row by its group's label too, and a sorted row shows the label it inherits.
  A probe's subset rows (marked ``data-cont`` by :func:`~abnirml.report.html.table_html`)
  travel with their probe row: sorting orders probes by their first row and keeps each
  probe's subsets beneath it, and a search that matches any row of a probe shows all
  of them.
"""

from __future__ import annotations

import base64
import hashlib

CONTROLS_FROM_ROWS = 12

SCRIPT = r"""
(function () {
  "use strict";
  function reveal(target) {
    for (var p = target; p; p = p.parentElement) {
      if (p.tagName === "DETAILS") { p.open = true; }
    }
    var own = target.querySelector(":scope > details");
    if (own) { own.open = true; }
  }
  function byHash(hash) {
    var id = decodeURIComponent((hash || "").slice(1));
    return id ? document.getElementById(id) : null;
  }
  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("a[href^='#']") : null;
    if (!link) { return; }
    var target = byHash(link.getAttribute("href"));
    if (target) { reveal(target); target.classList.add("target"); }
  });
  window.addEventListener("hashchange", function () {
    var target = byHash(location.hash);
    if (target) { reveal(target); target.scrollIntoView(); }
  });

  var FILTERED = ["Ranker", "Family", "Significant"];
  function number(text) {
    var plain = text.replace(/[\u2212]/g, "-").replace(/,/g, "");
    var m = plain.match(/[-+]?\d*\.?\d+(e[-+]?\d+)?/i);
    return m ? parseFloat(m[0]) : NaN;
  }
  function controls(table, index) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
    var box = document.createElement("div");
    box.className = "controls";
    var search = document.createElement("input");
    search.type = "search";
    search.placeholder = "filter rows";
    search.setAttribute("aria-label", "filter rows");
    search.className = "filter";
    box.appendChild(search);
    var groups = [];              // a probe row and the subset rows printed under it
    rows.forEach(function (row) {
      if (row.dataset.cont && groups.length) { groups[groups.length - 1].push(row); }
      else { groups.push([row]); }
    });
    var inherited = rows.map(function () { return []; });
    var lastText = [];
    rows.forEach(function (row, r) {
      if (row.dataset.cont) { return; }
      Array.prototype.forEach.call(row.cells, function (cell, column) {
        if (!cell.classList.contains("label")) { return; }
        var v = cell.textContent.trim();
        if (v === "" && lastText[column]) { inherited[r].push([column, lastText[column]]); }
        else if (v !== "") { lastText[column] = v; }
      });
    });
    function searchText(row) {
      var r = rows.indexOf(row);
      return (row.textContent + " " + inherited[r].map(function (c) { return c[1]; })
        .join(" ")).toLowerCase();
    }
    var selects = [];
    heads.forEach(function (th, column) {
      if (FILTERED.indexOf(th.textContent.trim()) < 0) { return; }
      var select = document.createElement("select");
      select.dataset.column = String(column);
      select.setAttribute("aria-label", th.textContent.trim());
      var values = [], last = "";
      rows.forEach(function (row) {
        var v = row.cells[column] ? row.cells[column].textContent.trim() : "";
        if (v === "") { v = last; } else { last = v; }  // a group's later rows: its value
        row.dataset["filter" + column] = v;
        if (v !== "" && values.indexOf(v) < 0) { values.push(v); }
      });
      [""].concat(values.sort()).forEach(function (v) {
        var option = document.createElement("option");
        option.value = v;
        option.textContent = v === "" ? th.textContent.trim() + ": all" : v;
        select.appendChild(option);
      });
      box.appendChild(select);
      selects.push(select);
    });
    var count = document.createElement("span");
    count.className = "count";
    box.appendChild(count);
    function apply() {
      var words = search.value.trim().toLowerCase();
      var shown = 0;
      groups.forEach(function (group) {
        var keep = !words || group.some(function (row) {
          return searchText(row).indexOf(words) >= 0;
        });
        selects.forEach(function (select) {
          var key = "filter" + select.dataset.column;
          if (select.value && group[0].dataset[key] !== select.value) { keep = false; }
        });
        group.forEach(function (row) { row.hidden = !keep; });
        if (keep) { shown += group.length; }
      });
      count.textContent = shown + " of " + rows.length + " rows";
    }
    search.addEventListener("input", apply);
    selects.forEach(function (s) { s.addEventListener("change", apply); });
    heads.forEach(function (th, column) {
      th.classList.add("sortable");
      th.tabIndex = 0;
      function sort() {
        var down = th.getAttribute("aria-sort") !== "descending";
        heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", down ? "descending" : "ascending");
        rows.forEach(function (row, r) {       // a moved row names the label it inherits
          inherited[r].forEach(function (c) {
            var cell = row.cells[c[0]];
            if (cell && cell.textContent.trim() === "") {
              cell.textContent = c[1];
              cell.classList.add("inherited");
            }
          });
        });
        var keyed = groups.map(function (group, i) {
          var row = group[0];
          var text = row.cells[column] ? row.cells[column].textContent.trim() : "";
          return {group: group, i: i, n: number(text), t: text,
                  small: row.classList.contains("small")};
        });
        var numeric = keyed.every(function (k) {
          return !isNaN(k.n) || k.t === "\u2013" || k.t === "";
        });
        keyed.sort(function (a, b) {
          if (a.small !== b.small) { return a.small ? 1 : -1; }
          var c;
          if (numeric) {
            var x = isNaN(a.n) ? -Infinity : a.n, y = isNaN(b.n) ? -Infinity : b.n;
            c = x === y ? 0 : (x < y ? -1 : 1);
          } else {
            c = a.t.localeCompare(b.t);
          }
          return (down ? -c : c) || a.i - b.i;
        });
        keyed.forEach(function (k) {
          k.group.forEach(function (row) { body.appendChild(row); });
        });
      }
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (e) { if (e.key === "Enter") { sort(); } });
    });
    var outer = table.parentNode.classList.contains("scroll") ? table.parentNode : table;
    outer.parentNode.insertBefore(box, outer);
    apply();
  }
  Array.prototype.forEach.call(document.querySelectorAll("table[data-table]"), function (t, i) {
    if (t.tBodies[0] && t.tBodies[0].rows.length > %(rows)d) { controls(t, i); }
  });
  var first = byHash(location.hash);
  if (first) { reveal(first); first.scrollIntoView(); }
})();
""".replace("%(rows)d", str(CONTROLS_FROM_ROWS))


def script_hash(script: str = SCRIPT) -> str:
    """The CSP source of ``script``: ``'sha256-<base64>'`` of its exact UTF-8 text."""
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
       f"script-src {script_hash()}; form-action 'none'; base-uri 'none'")
