//! zerfoo's static build of llguidance (https://github.com/guidance-ai/llguidance, MIT): the
//! crate's C API (`llg_*`, declared in ../include/llguidance.h, copied from the pinned crate) is
//! re-exported so that this staticlib carries it. libzerfoo.so links it privately; the version
//! script (src/capi/zerfoo.map) keeps every `llg_*` symbol local.
pub use llguidance::ffi::*;
