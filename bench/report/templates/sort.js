// Click (or Enter on) a header of any table.sortable to sort its body by that column; again to reverse.
// Cells may carry data-value; shown numbers ("1,542", "−3.4", "+0.7") also sort as numbers.
(function () {
function number(text) { var s = text.trim().replace(/,/g, "").replace("\u2212", "-"); return s === "" ? NaN : Number(s); }
document.querySelectorAll("table.sortable").forEach(function (table) {
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
})();
