"""Generic pieces every layer may use, with no knowledge of stages, runs or libraries: the option schema whose
errors are one line (`schema.Field`), strict YAML, the base of the records steps publish, the ledger's schema and
writer, and the SQL guard. They sit below the libraries (docs/architecture.md), beside `curate/io/`."""
