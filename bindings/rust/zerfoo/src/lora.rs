//! LoRA adapters: [`Model::load_lora`] loads a GGUF adapter (llama.cpp's layout) against a model,
//! [`Session::set_loras`] applies any set of them with scales.
use std::path::Path;
use std::ptr::{self, NonNull};

use zerfoo_sys as sys;

use crate::error::{check, Error, ErrorCode, Result};
use crate::model::Model;
use crate::session::Session;

/// A LoRA adapter loaded against a model (`zf_lora_load`). Immutable: share it between sessions
/// and threads freely. It keeps its model alive, and a session applying it keeps it alive, so
/// dropping in any order is safe.
#[derive(Debug)]
pub struct LoraAdapter {
    ptr: NonNull<sys::zf_lora_adapter>,
}

// SAFETY: the library documents an adapter as immutable after load, usable from any thread and
// freeable from any thread.
unsafe impl Send for LoraAdapter {}
unsafe impl Sync for LoraAdapter {}

impl Drop for LoraAdapter {
    fn drop(&mut self) {
        // SAFETY: ptr is the handle zf_lora_load returned, freed once here.
        unsafe { sys::zf!(zf_lora_free(self.ptr.as_ptr())) }
    }
}

/// What [`LoraAdapter::info`] reports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoraInfo {
    /// The largest rank of its pairs.
    pub rank: i32,
    /// `adapter.lora.alpha` (0 when the file has none).
    pub alpha: f32,
    /// Adapted weights (lora_a/lora_b pairs).
    pub n_weights: u32,
}

impl LoraAdapter {
    /// Rank, alpha and number of adapted weights.
    pub fn info(&self) -> Result<LoraInfo> {
        // SAFETY: a zeroed POD struct with struct_size set, filled by the call.
        let mut s: sys::zf_lora_summary = unsafe { std::mem::zeroed() };
        s.struct_size = std::mem::size_of::<sys::zf_lora_summary>() as u32;
        check(unsafe { sys::zf!(zf_lora_info(self.ptr.as_ptr(), &mut s)) })?;
        Ok(LoraInfo {
            rank: s.rank,
            alpha: s.alpha,
            n_weights: s.n_weights,
        })
    }
}

impl Model {
    /// Loads the LoRA adapter at `path` against this model (`zf_lora_load`): the architecture,
    /// every adapted weight's presence and the shapes are checked
    /// ([`ErrorCode::InvalidArgument`], [`ErrorCode::Format`] or [`ErrorCode::Unsupported`] with
    /// a message naming the tensor otherwise).
    pub fn load_lora(&self, path: impl AsRef<Path>) -> Result<LoraAdapter> {
        let path = path.as_ref();
        let c_path = crate::model::c_path(path, "adapter")?;
        let mut out = ptr::null_mut();
        // SAFETY: the model and path are valid for the call; out receives an owned handle.
        check(unsafe { sys::zf!(zf_lora_load(self.raw(), c_path.as_ptr(), &mut out)) })?;
        let ptr = NonNull::new(out)
            .ok_or_else(|| Error::new(ErrorCode::Internal, "zf_lora_load returned NULL"))?;
        Ok(LoraAdapter { ptr })
    }
}

impl Session<'_> {
    /// Sets the adapters this session applies from now on, each with its scale
    /// (`zf_session_set_loras`): an adapted weight computes `W x + s B (A x)` with
    /// `s = scale * alpha / rank`. An empty slice clears the set; scale 0 leaves an adapter out
    /// (the base model's output bit for bit). The conversation's KV cache stays as it was
    /// computed: [`Session::reset`] starts afresh under the new set.
    pub fn set_loras(&mut self, loras: &[(&LoraAdapter, f32)]) -> Result<()> {
        let ptrs: Vec<*const sys::zf_lora_adapter> = loras
            .iter()
            .map(|(a, _)| a.ptr.as_ptr() as *const _)
            .collect();
        let scales: Vec<f32> = loras.iter().map(|(_, s)| *s).collect();
        let (pa, ps) = if loras.is_empty() {
            (ptr::null(), ptr::null())
        } else {
            (ptrs.as_ptr(), scales.as_ptr())
        };
        // SAFETY: the arrays hold loras.len() valid entries for the call.
        check(unsafe { sys::zf!(zf_session_set_loras(self.raw(), pa, ps, loras.len())) })
    }
}
