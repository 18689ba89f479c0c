"""The folders every run directory has, named once: the run directory lays them out (rundir/layout.py) and
the chain check refuses a step named after one (config/chain.py), since a step's tables go to RUN/<step>/."""

TABLES = ("docs", "kept", "quarantine")   # one row per document, keyed by id
SOURCED = ("kept", "quarantine")          # every file carries `source` (rundir/tables.py)
BY_STEP = ("quarantine",)                 # RUN/<table>/<step>/<source>/: each step that writes it has its own part
RESERVED = (*TABLES, "ledger", "edits", "tokens", "_work", "_state")   # run folders no step may be named after
