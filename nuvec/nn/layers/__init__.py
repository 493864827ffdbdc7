"""The layers of `nuvec.nn`, one module per family (re-exported by `nuvec.nn`)."""
