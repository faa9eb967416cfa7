//! `swizzledb reproduce`: every figure of the five papers in one run, and a report of them.

pub mod figures;
