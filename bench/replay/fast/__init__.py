"""The speed machinery behind the plain replay, kept in one place.

The definition of a replay is `compactlab.replay.replay.replay_plain`: every recorded call, one by
one, through the engine. A run replays with `compactlab.replay.replay.replay`, which gives the same
rows faster with what is here:
- the rows before a setting's first compaction are the uncompacted replay's (`Walk.start_at`);
- `coasting`: the calls between compactions are rowed in bulk, on arrays;
- `shared_compactions`: settings that reach the same context compact it once.
How a session's rows then move between processes (as arrays and text codes) is the run's
business: `compactlab.runs.call_rows` and `compactlab.runs.text_codes`, beside the executors.
tests/replay/test_fast_path_equals_plain.py shows that a run's rows equal the plain replay's on every bundled dataset.
"""
