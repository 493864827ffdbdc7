"""nuvec.fast: fused operations ported from the Rust core (see shared/seeds/000_...txt)."""
