"""What wrote a suite's summaries: the `[summarizer]` as resolved, recorded by `baseline` and compared by `check`.

The baseline (format 4) keeps, under `summarizer`, the provider, the model, the base URL's host (never
the URL itself: it may carry credentials or a path), every other key of the table (`parameters`, the
answers folder aside) and, per key written as `${NAME}` / `${NAME:-default}`, which environment
variables it named and whether each was set. `check` names every part that differs, before anything
else, with where the value came from now:

    model: my-local-model → gpt-4.1-mini (COMPACTLAB_MODEL unset)

A recorded answer's key holds the provider, the model and the temperature (`compactlab.gate.answers`),
so when one of them changed and requests found no answer, that change is the reason the check has no
result (exit 2), and the fix is to restore it, not to look at the replay. A baseline of format 3 or
earlier has only the model that read each setting's templates (`read_by`): provider and model are
compared from it, and the check says what it cannot compare.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlsplit

from compactlab.gate.suite import _VARIABLE, Suite

NOT_PARAMETERS = frozenset({"provider", "model", "base_url", "cache_dir"})  # recorded apart, or where, not what
IN_ANSWER_KEYS = frozenset({"provider", "model", "temperature", "recorded_provider"})  # part of every answer's key
NAMES = {"base_url": "base URL host"}


@dataclass(frozen=True)
class Change:
    key: str  # a [summarizer] key: provider, model, base_url, temperature, ...
    before: object
    after: object
    source: str  # where the value comes from now: "COMPACTLAB_MODEL unset", "from COMPACTLAB_MODEL", ""

    @property
    def line(self) -> str:
        where = f" ({self.source})" if self.source else ""
        none = "(the provider's own)" if self.key == "base_url" else "(none)"
        before, after = (none if v is None else v if isinstance(v, str) else repr(v) for v in (self.before, self.after))
        return f"{NAMES.get(self.key, self.key)}: {before} → {after}{where}"


@dataclass(frozen=True)
class Provenance:
    """How this run's summarizer differs from the baseline's: what changed, and what could not be compared."""

    changes: tuple[Change, ...] = ()
    not_compared: str = ""

    @property
    def lines(self) -> list[str]:
        return [c.line for c in self.changes] + ([self.not_compared] if self.not_compared else [])

    @property
    def answer_keys(self) -> tuple[Change, ...]:
        """The changes that make a recorded answer another request's."""
        return tuple(c for c in self.changes if c.key in IN_ANSWER_KEYS)


def summarizer_record(suite: Suite) -> dict | None:
    """The suite's [summarizer] as this run resolved it, for the baseline (None without one)."""
    settings = dict(suite.config.summarizer)
    if not settings:
        return None
    return {
        "provider": settings.get("provider"),
        "model": settings.get("model"),
        "base_url_host": _host(settings.get("base_url")),
        "parameters": {k: v for k, v in sorted(settings.items()) if k not in NOT_PARAMETERS},
        "environment": {key: dict(found) for key, text in _written(suite).items() if (found := _variables(text))},
    }


def compare_summarizer(suite: Suite, baseline: dict) -> Provenance:
    """What differs between the baseline's summarizer and this suite's, in the order a person reads them."""
    now = summarizer_record(suite)
    if "summarizer" not in baseline:  # format 3 or earlier: only the model that read the templates
        read_by = sorted({r.get("read_by") for r in baseline.get("strategies", {}).values() if r.get("read_by")})
        if now is None and not read_by:
            return Provenance()
        old: dict = {"provider": None, "model": None}
        if len(read_by) == 1:
            old["provider"], _, old["model"] = read_by[0].partition(":")
        missing = "base URL host and parameters" if read_by else "summarizer (provider, model, base URL host, parameters)"
        note = (
            f"not compared: the baseline (format {baseline.get('format')}) records no {missing}; "
            "`compactlab baseline --update` records them"
        )
        keys = ("provider", "model") if len(read_by) == 1 else ()  # several models: none to compare with
        return Provenance(_changes(suite, old, _flat(now), keys), note)
    old, new = _flat(baseline["summarizer"]), _flat(now)
    if not old and not new:
        return Provenance()
    parameters = sorted((set(old) | set(new)) - {"provider", "model", "base_url"})
    return Provenance(_changes(suite, old, new, ("provider", "model", "base_url", *parameters)))


def _flat(record: dict | None) -> dict:
    """A recorded summarizer as one table of [summarizer] keys (`base_url`: its host)."""
    if not record:
        return {}
    return {
        **(record.get("parameters") or {}),
        "provider": record.get("provider"),
        "model": record.get("model"),
        "base_url": record.get("base_url_host"),
    }


def _changes(suite: Suite, old: dict, new: dict, keys) -> tuple[Change, ...]:
    written = _written(suite)
    return tuple(Change(k, old.get(k), new.get(k), _source(written.get(k))) for k in keys if old.get(k) != new.get(k))


def reason(provenance: Provenance, suite: Suite) -> str:
    """Why recorded answers were not found, when a change to what is in their keys explains it ('' otherwise)."""
    changed = provenance.answer_keys
    if not changed:
        return ""
    written = _written(suite)
    fixes = []
    for change in changed:
        names = [name for name, _ in _variables(written.get(change.key, ""))]
        fixes.append(
            f"{names[0]}={change.before}" if names and change.before is not None else f"{change.key} = {change.before!r}"
        )
    return (
        f"the recorded answers were written by the baseline's summarizer and this run's differs "
        f"({', '.join(NAMES.get(c.key, c.key) for c in changed)}: see above), so its requests match none of them: "
        f"set {' and '.join(fixes)} as when the baseline was made, or, if the change is deliberate, remake the baseline "
        "with this summarizer and its key set (`compactlab baseline --update`)"
    )


def _written(suite: Suite) -> dict[str, str]:
    """The [summarizer] strings as the suite writes them (before the environment is read)."""
    table = suite.written.get("run", {}).get("summarizer") or {}
    return {k: v for k, v in table.items() if isinstance(v, str)}


def _variables(text: str) -> list[tuple[str, bool]]:
    return [(found.group(1), os.environ.get(found.group(1), "") != "") for found in _VARIABLE.finditer(text)]


def _source(text: str | None) -> str:
    """Where a value written `text` comes from now: the variable it was read from, or the one unset."""
    found = _variables(text or "")
    if not found:
        return ""
    return "; ".join(f"from {name}" if set_ else f"{name} unset" for name, set_ in found)


def _host(url: object) -> str | None:
    if not isinstance(url, str) or not url:
        return None
    parts = urlsplit(url if "//" in url else f"//{url}")
    return f"{parts.hostname}:{parts.port}" if parts.port else parts.hostname
