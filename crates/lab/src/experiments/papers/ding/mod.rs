//! Ding, Shan and Jiang 2015 (BP-Wrapper): the live engine's replacement lock, and the paper's
//! buffer emulator.

pub mod bpwrapper;
pub mod buffer_sizes;
pub mod emulator;
pub mod lock_hold;
