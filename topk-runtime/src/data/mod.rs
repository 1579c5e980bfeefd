//! data generators
