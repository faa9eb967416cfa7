//! Gilbert 2017: pointer swizzling and page replacement.

pub mod fix_time;
pub mod long_run;
pub mod policies;
pub mod pools;
pub mod stack_depth;
