"""The scoring stage: what a step needs (extraction, matching), preservation, re-acquisition, the next-action judge, statistics."""
