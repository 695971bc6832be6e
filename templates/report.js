// campaign's HTML report: sortable and filterable tables, hover values and legend toggles on
// the plotters SVG figures, every <details> open in print. Plain DOM, no library, nothing
// fetched. The page reads fine without it.
(function () {
  "use strict";

  function cellValue(row, col) {
    var cell = row.cells[col];
    if (!cell) return "";
    return cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent;
  }

  function blank(v, numeric) {
    return numeric ? isNaN(parseFloat(v)) : v === "";
  }

  function compare(a, b, numeric) {
    if (numeric) return parseFloat(a) - parseFloat(b);
    return a.localeCompare(b, undefined, { numeric: true, sensitivity: "base" });
  }

  // Sorting: a click on a header's button sorts by that column, a second click reverses.
  function makeSortable(table) {
    var headRow = table.tHead && table.tHead.rows[0];
    if (!headRow || !table.tBodies[0]) return;
    Array.prototype.forEach.call(headRow.cells, function (th, col) {
      var button = th.querySelector("button.sort");
      if (!button) return;
      button.addEventListener("click", function () {
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(headRow.cells, function (other) {
          if (other.hasAttribute("aria-sort")) other.setAttribute("aria-sort", "none");
        });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var numeric = th.getAttribute("data-numeric") === "true";
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.forEach(function (r, i) { r._order = i; });
        rows.sort(function (a, b) {
          var x = cellValue(a, col), y = cellValue(b, col);
          var bx = blank(x, numeric), by = blank(y, numeric);
          // Cells without a value stay last whichever way the column is sorted.
          var c = bx || by ? (bx === by ? 0 : (bx ? 1 : -1)) : compare(x, y, numeric) * (ascending ? 1 : -1);
          return c !== 0 ? c : a._order - b._order;
        });
        var frag = document.createDocumentFragment();
        rows.forEach(function (r) { frag.appendChild(r); });
        body.appendChild(frag);
      });
    });
  }

  // Filtering: each box keeps the rows whose cell in its column contains the text (any case);
  // a text in double quotes ("reduce") must be the whole cell, so it does not also keep
  // reduce_scatter. Several boxes must all match.
  function filterTerm(input) {
    var text = input.value.trim().toLowerCase();
    var quoted = /^"(.*)"$/.exec(text);
    return quoted ? { text: quoted[1].trim(), exact: true } : { text: text, exact: false };
  }
  function matches(cell, term) {
    var text = cell.textContent.trim().toLowerCase();
    return term.exact ? text === term.text : text.indexOf(term.text) !== -1;
  }
  function makeFilterable(table) {
    var inputs = table.querySelectorAll("tr.filters input[data-col]");
    var count = document.getElementById("results-count");
    var clear = document.getElementById("results-clear");
    var body = table.tBodies[0];
    function apply() {
      var wanted = [];
      Array.prototype.forEach.call(inputs, function (input) {
        var term = filterTerm(input);
        if (term.text || term.exact) wanted.push([parseInt(input.getAttribute("data-col"), 10), term]);
      });
      var shown = 0;
      Array.prototype.forEach.call(body.rows, function (row) {
        var keep = wanted.every(function (w) {
          var cell = row.cells[w[0]];
          return cell && matches(cell, w[1]);
        });
        row.hidden = !keep;
        if (keep) shown += 1;
      });
      if (count) {
        var total = body.rows.length;
        count.textContent = shown === total ? total + " rows" : shown + " of " + total + " rows shown";
      }
    }
    Array.prototype.forEach.call(inputs, function (input) {
      input.addEventListener("input", apply);
    });
    if (clear) {
      clear.addEventListener("click", function () {
        Array.prototype.forEach.call(inputs, function (input) { input.value = ""; });
        apply();
      });
    }
  }

  var tooltip = document.getElementById("tooltip");
  var SVG_NS = "http://www.w3.org/2000/svg";

  // Every value drawn at (nearly) the same spot is shown: overlapping series hide none.
  function showTip(points, event) {
    if (!tooltip) return;
    tooltip.textContent = "";
    points.slice(0, 8).forEach(function (point) {
      var entry = document.createElement("div");
      var s = document.createElement("span");
      s.className = "series";
      s.textContent = point.series;
      entry.appendChild(s);
      entry.appendChild(document.createTextNode(point.text));
      tooltip.appendChild(entry);
    });
    if (points.length > 8) {
      tooltip.appendChild(document.createTextNode("… and " + (points.length - 8) + " more here"));
    }
    tooltip.hidden = false;
    var x = event.clientX + 14, y = event.clientY + 14;
    var w = tooltip.offsetWidth, h = tooltip.offsetHeight;
    if (x + w > window.innerWidth - 4) x = Math.max(4, event.clientX - w - 14);
    if (y + h > window.innerHeight - 4) y = Math.max(4, event.clientY - h - 14);
    tooltip.style.left = x + "px";
    tooltip.style.top = y + "px";
  }

  function hideTip() {
    if (tooltip) tooltip.hidden = true;
  }

  // A figure: its hover values (pixels of the SVG's user space) and a legend of its series'
  // colours; hiding a series hides every SVG element drawn in its colour.
  function makeFigure(figure) {
    var svg = figure.querySelector(".plot svg");
    var data = figure.querySelector("script.hover-data");
    if (!svg || !data) return;
    var points = [];
    try { points = JSON.parse(data.textContent) || []; } catch (e) { points = []; }
    var hidden = {};
    var legend = figure.querySelector(".legend");
    var colours = [];
    var labels = {};
    points.forEach(function (p) {
      if (!(p.color in labels)) { labels[p.color] = []; colours.push(p.color); }
      if (labels[p.color].indexOf(p.series) === -1) labels[p.color].push(p.series);
    });
    if (legend) {
      colours.forEach(function (colour) {
        var b = document.createElement("button");
        b.type = "button";
        b.setAttribute("aria-pressed", "true");
        b.setAttribute("data-color", colour);
        var sw = document.createElement("span");
        sw.className = "swatch";
        sw.style.background = colour;
        b.appendChild(sw);
        b.appendChild(document.createTextNode(labels[colour].join(" / ")));
        b.addEventListener("click", function () {
          var hide = !hidden[colour];
          hidden[colour] = hide;
          b.setAttribute("aria-pressed", hide ? "false" : "true");
          var sel = '[stroke="' + colour + '" i], [fill="' + colour + '" i]';
          Array.prototype.forEach.call(svg.querySelectorAll(sel), function (el) {
            if (el.classList.contains("hover-mark")) return;
            el.style.display = hide ? "none" : "";
          });
          mark.style.display = "none";
          hideTip();
        });
        legend.appendChild(b);
      });
    }
    var mark = document.createElementNS(SVG_NS, "circle");
    mark.setAttribute("class", "hover-mark");
    mark.setAttribute("r", "7");
    mark.setAttribute("fill", "none");
    mark.setAttribute("stroke-width", "2.5");
    mark.style.display = "none";
    svg.appendChild(mark);
    // The visible values nearest the pointer (within 14 screen pixels), all of those drawn
    // at the same spot.
    function nearest(event) {
      var ctm = svg.getScreenCTM();
      if (!ctm) return [];
      var pt = svg.createSVGPoint();
      pt.x = event.clientX;
      pt.y = event.clientY;
      var at = pt.matrixTransform(ctm.inverse());
      var reach = 14 / (ctm.a || 1);
      var best = null, bestD = reach * reach;
      points.forEach(function (p) {
        if (hidden[p.color]) return;
        var dx = p.x - at.x, dy = p.y - at.y, d = dx * dx + dy * dy;
        if (d <= bestD) { best = p; bestD = d; }
      });
      if (!best) return [];
      return points.filter(function (p) {
        return !hidden[p.color] && Math.abs(p.x - best.x) <= 2 && Math.abs(p.y - best.y) <= 2;
      });
    }
    svg.addEventListener("mousemove", function (event) {
      var here = nearest(event);
      if (!here.length) { mark.style.display = "none"; hideTip(); return; }
      mark.setAttribute("cx", String(here[0].x));
      mark.setAttribute("cy", String(here[0].y));
      mark.setAttribute("stroke", "#000000");
      mark.style.display = "";
      showTip(here, event);
    });
    svg.addEventListener("mouseleave", function () {
      mark.style.display = "none";
      hideTip();
    });
  }

  // Print everything: the closed <details> open for printing and close again after.
  var opened = [];
  window.addEventListener("beforeprint", function () {
    opened = Array.prototype.filter.call(document.querySelectorAll("details"), function (d) {
      return !d.open;
    });
    opened.forEach(function (d) { d.open = true; });
  });
  window.addEventListener("afterprint", function () {
    opened.forEach(function (d) { d.open = false; });
    opened = [];
  });

  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), makeSortable);
  var results = document.getElementById("results-table");
  if (results) makeFilterable(results);
  Array.prototype.forEach.call(document.querySelectorAll("figure.chart"), makeFigure);
})();
