// Click (or Enter on) a header of any table.sortable to sort its body by that column; again to reverse.
// Cells may carry data-value; shown numbers ("1,542", "−3.4", "+0.7") also sort as numbers.
// A table of four rows or more also gets a filter box: only rows containing every typed word stay shown.
// `compactlabTables(root)` sets up the tables under `root` (lazy.js calls it on a block it inflates).
var compactlabTables = (function () {
var made = 0;
function addFilter(table) {
  var body = table.tBodies[0];
  if (!body || body.rows.length < 4) { return; }
  made += 1;
  if (!table.id) { table.id = "table-" + made; }
  var box = document.createElement("input");
  box.type = "search";
  box.className = "table-filter";
  box.placeholder = "filter rows (e.g. summarize keep=8000)";
  box.setAttribute("aria-label", "filter the rows of the table below");
  box.setAttribute("aria-controls", table.id);
  box.style.cssText = "margin:0.3em 0;padding:0.2em 0.4em;width:22em;max-width:100%;font:inherit";
  var count = document.createElement("span");
  count.className = "muted filter-count";
  count.style.marginLeft = "0.6em";
  var anchor = table.parentNode.classList.contains("table-wrap") ? table.parentNode : table;
  anchor.parentNode.insertBefore(box, anchor);
  anchor.parentNode.insertBefore(count, anchor);
  box.addEventListener("input", function () {
    var words = box.value.toLowerCase().split(/\s+/).filter(function (w) { return w; });
    var shown = 0;
    Array.prototype.forEach.call(body.rows, function (row) {
      var text = row.textContent.toLowerCase();
      var keep = words.every(function (w) { return text.indexOf(w) >= 0; });
      row.hidden = !keep;
      shown += keep ? 1 : 0;
    });
    count.textContent = words.length ? shown + " of " + body.rows.length + " rows" : "";
  });
}
function number(text) { var s = text.trim().replace(/,/g, "").replace("\u2212", "-"); return s === "" ? NaN : Number(s); }
function setup(root) {
root.querySelectorAll("table.sortable").forEach(addFilter);
root.querySelectorAll("table.sortable").forEach(function (table) {
  table.classList.add("ready");
  var headers = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(headers, function (th, column) {
    th.tabIndex = 0;
    function sort() {
      var descending = th.getAttribute("aria-sort") === "ascending";
      Array.prototype.forEach.call(headers, function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", descending ? "descending" : "ascending");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      function key(row) { var c = row.cells[column]; return c.hasAttribute("data-value") ? c.getAttribute("data-value") : c.textContent; }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b), nx = number(x), ny = number(y);
        // Numbers sort numerically and before text such as "–"; text sorts alphabetically.
        var order = !isNaN(nx) && !isNaN(ny) ? nx - ny : isNaN(nx) !== isNaN(ny) ? (isNaN(nx) ? 1 : -1) : x.localeCompare(y);
        return descending ? -order : order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    }
    th.addEventListener("click", sort);
    th.addEventListener("keydown", function (e) { if (e.key === "Enter") { sort(); } });
  });
});
}
return setup;
})();
compactlabTables(document);
