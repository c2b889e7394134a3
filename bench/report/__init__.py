"""HTML reports: standalone pages built from reusable sections (jinja2 templates + inline SVG charts).

Every page is self-contained: no network, no external scripts or stylesheets, charts inlined as
SVG, so a report can be mailed, archived or opened from disk years later.
"""
