//! The policies, one file each: the algorithms the crate README's rules serve; the lists, ghost
//! directories and residency bits they share stay beside `lib.rs`.

pub(crate) mod arc;
pub(crate) mod car;
pub(crate) mod clock;
pub(crate) mod clock_pro;
pub(crate) mod fifo;
pub(crate) mod gclock;
pub(crate) mod hot_cold;
pub(crate) mod leaf;
pub(crate) mod lirs;
pub(crate) mod lru;
pub(crate) mod lru_k;
pub(crate) mod mq;
pub(crate) mod mru;
pub(crate) mod random;
pub(crate) mod s3_fifo;
pub(crate) mod sieve;
pub(crate) mod two_q;
