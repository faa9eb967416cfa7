//! Graefe et al. 2014: Figs. 10-14.

pub mod fig10;
pub mod fig12;
pub mod fig13;
pub mod fig14;
