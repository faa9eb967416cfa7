//! Chou and DeWitt 1986: DBMIN and the other buffer managers in a simulated multiuser system.

pub mod dbmin;
