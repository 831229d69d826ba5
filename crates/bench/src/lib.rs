//! `plumb bench`: a load generator for plumb and for the systems people compare it with.

pub mod app;
pub mod burnkv;
pub mod chart;
pub mod coord;
pub mod cost;
pub mod cpu;
pub mod load;
pub mod plumb;
pub mod prophecy;
pub mod readwork;
pub mod recovery;
pub mod report;
pub mod scenario;
pub mod speculation;
pub mod suite;
pub mod systems;
pub mod target;
pub mod unreplicated;
pub mod workload;
pub mod zz;
