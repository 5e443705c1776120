//! Images and audio: [`Mmproj::load`] loads a projector (llama.cpp's `mmproj` GGUF) for a model;
//! [`Mmproj::embed_image`] (a vision projector) turns an image, [`Mmproj::embed_audio`] (an audio
//! projector) a clip into the embeddings the model takes in its prompt.
use std::ffi::CStr;
use std::path::Path;
use std::ptr::{self, NonNull};

use zerfoo_sys as sys;

use crate::error::{check, Error, ErrorCode, Result};
use crate::model::Model;

/// A vision or audio projector loaded for a model (`zf_mmproj_load`; [`MmprojInfo`] says which).
/// Immutable: any number of threads may embed with it at once. It keeps its model alive, so dropping in any order is safe.
#[derive(Debug)]
pub struct Mmproj {
    ptr: NonNull<sys::zf_mmproj>,
}

// SAFETY: the library documents a projector as immutable after load, usable from several threads
// at once (each call borrows its own encoder) and freeable from any thread.
unsafe impl Send for Mmproj {}
unsafe impl Sync for Mmproj {}

impl Mmproj {
    pub(crate) fn raw(&self) -> *mut sys::zf_mmproj {
        self.ptr.as_ptr()
    }
}

/// Projectors are equal when they are the same handle.
impl PartialEq for Mmproj {
    fn eq(&self, other: &Mmproj) -> bool {
        self.ptr == other.ptr
    }
}

impl Eq for Mmproj {}

impl Drop for Mmproj {
    fn drop(&mut self) {
        // SAFETY: ptr is the handle zf_mmproj_load returned, freed once here.
        unsafe { sys::zf!(zf_mmproj_free(self.ptr.as_ptr())) }
    }
}

/// What [`Mmproj::info`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MmprojInfo {
    /// `clip.projector_type`, e.g. "gemma3".
    pub projector_type: String,
    /// The encoder's square input side in pixels.
    pub image_size: i32,
    /// Pixels per patch side.
    pub patch_size: i32,
    /// Embeddings per image.
    pub n_tokens: i32,
    /// Width of each embedding (the model's).
    pub n_embd: i32,
    /// The vision encoder's own width.
    pub n_embd_vision: i32,
    /// Vision encoder blocks.
    pub n_layer: i32,
    /// It encodes images ([`Mmproj::embed_image`], `image_url` parts).
    pub image: bool,
    /// It encodes audio ([`Mmproj::embed_audio`], `input_audio` parts).
    pub audio: bool,
    /// An audio projector's PCM rate ([`AUDIO_SAMPLE_RATE`](crate::AUDIO_SAMPLE_RATE)); 0 for a vision projector.
    pub sample_rate: i32,
}

/// An image for [`Mmproj::embed_image`].
#[derive(Debug, Clone, Copy)]
pub enum Image<'a> {
    /// An image file's bytes: JPEG, PNG, GIF (first frame) or BMP (WebP is refused by name).
    Encoded(&'a [u8]),
    /// Raw pixels: `height` rows of `width` pixels, R G B bytes each (`width * height * 3` bytes).
    Rgb8 {
        /// The pixels.
        data: &'a [u8],
        /// Pixels per row.
        width: u32,
        /// Rows.
        height: u32,
    },
}

impl Image<'_> {
    /// The image as a `zf_image` borrowing its bytes (valid while `self`'s data is).
    pub(crate) fn raw(&self) -> sys::zf_image {
        // SAFETY: a zeroed POD struct, filled below.
        let mut im: sys::zf_image = unsafe { std::mem::zeroed() };
        im.struct_size = std::mem::size_of::<sys::zf_image>() as u32;
        let data = match *self {
            Image::Encoded(d) => {
                im.format = sys::ZF_IMAGE_ENCODED as u32;
                d
            }
            Image::Rgb8 {
                data,
                width,
                height,
            } => {
                im.format = sys::ZF_IMAGE_RGB8 as u32;
                im.width = width;
                im.height = height;
                data
            }
        };
        im.data = if data.is_empty() {
            ptr::null()
        } else {
            data.as_ptr().cast()
        };
        im.size = data.len();
        im
    }
}

/// Image embeddings: `n_tokens` rows of `n_embd` floats, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageEmbedding {
    /// Rows (embeddings per image).
    pub n_tokens: usize,
    /// Floats per row.
    pub n_embd: usize,
    /// `n_tokens * n_embd` floats.
    pub data: Vec<f32>,
}

impl ImageEmbedding {
    /// Row `i`.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.n_embd..(i + 1) * self.n_embd]
    }
}

/// The largest image [`Mmproj::embed_image`] takes, in pixels: 8192 x 8192.
pub const MAX_IMAGE_PIXELS: u64 = sys::ZF_IMAGE_MAX_PIXELS as u64;

impl Mmproj {
    /// Loads the projector at `path` for `model`. A projector of another model (its output width
    /// is not the model's embedding width, or its type another family) fails with
    /// [`ErrorCode::InvalidArgument`] naming both; a malformed file with [`ErrorCode::Format`]
    /// naming the key or tensor.
    pub fn load(model: &Model, path: impl AsRef<Path>) -> Result<Mmproj> {
        let path = path.as_ref();
        let c_path = crate::model::c_path(path, "mmproj")?;
        let mut out = ptr::null_mut();
        // SAFETY: the model and path are valid for the call; out receives an owned handle.
        check(unsafe { sys::zf!(zf_mmproj_load(model.raw(), c_path.as_ptr(), 0, &mut out)) })?;
        let ptr = NonNull::new(out)
            .ok_or_else(|| Error::new(ErrorCode::Internal, "zf_mmproj_load returned NULL"))?;
        Ok(Mmproj { ptr })
    }

    /// The projector's type, input geometry and widths.
    pub fn info(&self) -> Result<MmprojInfo> {
        // SAFETY: a zeroed POD struct with struct_size set, filled by the call.
        let mut s: sys::zf_mmproj_summary = unsafe { std::mem::zeroed() };
        s.struct_size = std::mem::size_of::<sys::zf_mmproj_summary>() as u32;
        check(unsafe { sys::zf!(zf_mmproj_info(self.ptr.as_ptr(), &mut s)) })?;
        let projector_type = if s.projector_type.is_null() {
            String::new()
        } else {
            // SAFETY: a NUL-terminated string owned by the projector, which self holds.
            unsafe { CStr::from_ptr(s.projector_type) }
                .to_string_lossy()
                .into_owned()
        };
        Ok(MmprojInfo {
            projector_type,
            image_size: s.image_size,
            patch_size: s.patch_size,
            n_tokens: s.n_tokens,
            n_embd: s.n_embd,
            n_embd_vision: s.n_embd_vision,
            n_layer: s.n_layer,
            image: s.modalities & sys::ZF_MODALITY_IMAGE as u32 != 0,
            audio: s.modalities & sys::ZF_MODALITY_AUDIO as u32 != 0,
            sample_rate: s.sample_rate,
        })
    }

    /// The image's embeddings as the model takes them in its prompt (`zf_image_embed`), on
    /// `n_threads` workers (0: the machine's cores, at most 8). Bad bytes fail with
    /// [`ErrorCode::Format`] or [`ErrorCode::InvalidArgument`] (WebP, an unknown container, over
    /// [`MAX_IMAGE_PIXELS`], a pixel count that does not match) naming the problem.
    pub fn embed_image(&self, image: Image<'_>, n_threads: i32) -> Result<ImageEmbedding> {
        let im = image.raw();
        // The size first (the image is decoded, not encoded), then the embeddings.
        ImageEmbedding::encode(|out, cap, needed, n_tokens| {
            // SAFETY: im borrows `data` for the call; out holds cap floats (NULL with cap 0);
            // needed and n_tokens are valid out-pointers.
            unsafe {
                sys::zf!(zf_image_embed(
                    self.ptr.as_ptr(),
                    &im,
                    n_threads,
                    out,
                    cap,
                    needed,
                    n_tokens
                ))
            }
        })
    }
}

impl ImageEmbedding {
    /// Runs an encoder call `f(out, cap, needed, n_tokens)` for the size (NULL, 0), then into a
    /// buffer of that size, and checks that the floats divide into the rows.
    pub(crate) fn encode(
        mut f: impl FnMut(*mut f32, usize, &mut usize, &mut i32) -> sys::zf_status,
    ) -> Result<ImageEmbedding> {
        let mut needed = 0usize;
        let mut n_tokens = 0i32;
        let st = f(ptr::null_mut(), 0, &mut needed, &mut n_tokens);
        if st != sys::ZF_ERR_BUFFER_TOO_SMALL {
            check(st)?;
        }
        let mut data = vec![0f32; needed];
        check(f(data.as_mut_ptr(), data.len(), &mut needed, &mut n_tokens))?;
        let n_tokens = usize::try_from(n_tokens).unwrap_or(0);
        if n_tokens == 0 || data.len() % n_tokens != 0 {
            return Err(Error::new(
                ErrorCode::Internal,
                format!("{} floats for {} tokens", data.len(), n_tokens),
            ));
        }
        Ok(ImageEmbedding {
            n_tokens,
            n_embd: data.len() / n_tokens,
            data,
        })
    }
}
