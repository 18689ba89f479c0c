"""The run directory: every path of a run, the ledger, the stage records and the accounting, in one place.

Stages talk to each other only through it: an upstream step writes files and publishes a small record;
a later step reads them. Nothing here knows a stage class.
"""

from curate.rundir.accounting import aggregate
from curate.rundir.layout import RunDir
from curate.common.ledger import LEDGER_SCHEMA, ledger_table, write_ledger
from curate.rundir.records import (ClassifyRecord, DedupRecord, DualUseRecord, EditsRecord, IngestRecord, MinhashRecord, MixRecord, PackRecord,
                                   TokenizerRecord)

__all__ = ["RunDir", "LEDGER_SCHEMA", "ledger_table", "write_ledger", "aggregate",
           "ClassifyRecord", "DedupRecord", "DualUseRecord", "EditsRecord", "IngestRecord", "MinhashRecord", "MixRecord", "PackRecord",
           "TokenizerRecord"]
