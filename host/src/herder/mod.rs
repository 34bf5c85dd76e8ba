//! Turns the desired connectors into running ones. Standalone today; distributed later.

pub mod standalone;
