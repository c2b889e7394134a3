"""The results stage: replayed rows into metric tables, the metric catalogue, the recommendation rule, the leaderboard."""
