"""HTML reports: standalone pages built from reusable sections (jinja2 templates + inline SVG charts).

Every page is self-contained: no network, no external scripts or stylesheets, charts inlined as
SVG, so a report can be mailed, archived or opened from disk years later.

- `page`: the shell (styles, the table-sorting script, a Content-Security-Policy allowing only it);
- `estimation_section`, `charts`: the token-estimation section;
- `run_report` (with `run_data`, `overview_section`, `run_charts`, `sawtooth`, `sessions`,
  `real_compactions_section`): the report of a run directory, `compactlab report`;
- `svg_plot`: what every chart is drawn with (axes, ticks, lines, dots, keys written as SVG from the data);
- `diff`: what changed between two runs, `compactlab diff`.
"""
