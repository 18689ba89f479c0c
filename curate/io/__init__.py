"""Files on any fsspec filesystem: globbing, decompressing streams, atomic writes."""
