// Detail on demand (compactlab.report.lazy): a <details data-lazy="…"> holds its body gzip-compressed and
// base64-encoded; the first time it is opened, the body is inflated into it and its tables set up.
// The body is the report's own escaped HTML: inserted as markup, it runs nothing (and the page's
// security policy would refuse an inline handler or script anyway).
(function () {
function inflate(details) {
  var data = details.getAttribute("data-lazy");
  if (!data) { return; }
  details.removeAttribute("data-lazy");
  var text = atob(data);
  var bytes = new Uint8Array(text.length);
  for (var i = 0; i < text.length; i++) { bytes[i] = text.charCodeAt(i); }
  var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  new Response(stream).text().then(function (html) {
    var body = details.querySelector(".lazy-body");
    body.innerHTML = html;
    compactlabTables(body);
    details.setAttribute("data-loaded", "");
  });
}
document.querySelectorAll("details[data-lazy]").forEach(function (details) {
  details.addEventListener("toggle", function () { if (details.open) { inflate(details); } });
  if (details.open) { inflate(details); }
});
// A link to a block (or into one) opens it.
function follow() {
  var target = location.hash ? document.getElementById(decodeURIComponent(location.hash.slice(1))) : null;
  var block = target ? target.closest("details") : null;
  if (block && !block.open) { block.open = true; }
}
window.addEventListener("hashchange", follow);
follow();
})();
