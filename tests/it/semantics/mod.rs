//! The tool's semantics against its reference: the golden cases, the index
//! files', properties of the specification, the fuzz regressions.

mod fuzz_regressions;
mod golden;
mod golden_index;
mod properties;
