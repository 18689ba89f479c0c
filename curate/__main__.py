from curate.cli import entry

entry()
