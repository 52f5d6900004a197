"""CI babysitting core: classify a tick's checks (classify), trim logs (logs), patterns as data (patterns)."""
