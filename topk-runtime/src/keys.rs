//! filled by the CPU backend
