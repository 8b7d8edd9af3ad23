//! FUSE adapter (to come).
