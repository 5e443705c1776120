//! Speech to text with Whisper (whisper.cpp's ggml `.bin` files): [`SpeechModel::load`],
//! [`SpeechModel::transcribe`] (segments with times and token probabilities, each also handed to
//! a callback as it is decoded), and [`decode_wav`] for WAV bytes.
use std::any::Any;
use std::ffi::{c_void, CString};
use std::ops::ControlFlow;
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::ptr::{self, NonNull};

use zerfoo_sys as sys;

use crate::error::{check, Error, ErrorCode, Result};
use crate::model::read_buffer;

/// A Whisper model (`zf_speech_load`). Immutable: share it between threads; concurrent
/// transcriptions are independent.
///
/// ```
/// fn send_sync<T: Send + Sync>() {}
/// send_sync::<zerfoo::SpeechModel>();
/// ```
#[derive(Debug)]
pub struct SpeechModel {
    ptr: NonNull<sys::zf_speech_model>,
}

// SAFETY: the library documents a speech model as immutable after load, usable and freeable
// from any thread.
unsafe impl Send for SpeechModel {}
unsafe impl Sync for SpeechModel {}

impl Drop for SpeechModel {
    fn drop(&mut self) {
        // SAFETY: ptr is the handle zf_speech_load returned, freed once here.
        unsafe { sys::zf!(zf_speech_free(self.ptr.as_ptr())) }
    }
}

/// What [`SpeechModel::info`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpeechInfo {
    /// Vocabulary size.
    pub n_vocab: i32,
    /// Log-mel bins (80, or 128 for large-v3).
    pub n_mels: i32,
    /// Encoder blocks.
    pub n_audio_layer: i32,
    /// Decoder blocks.
    pub n_text_layer: i32,
    /// Encoder width.
    pub n_audio_state: i32,
    /// Multilingual (language detection, translation) rather than English-only (`.en`).
    pub multilingual: bool,
}

/// Options of [`SpeechModel::transcribe`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TranscribeOptions {
    /// Worker threads; 0 = the hardware's (at most 8).
    pub n_threads: i32,
    /// A Whisper language code ("en", "de", ...), "auto" (multilingual models), or `None` ("en").
    pub language: Option<String>,
    /// Translate into English (multilingual models).
    pub translate: bool,
    /// Decode without timestamps (one segment per 30 s window).
    pub no_timestamps: bool,
}

/// One decoded token of a segment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpeechToken {
    /// Token id ([`SpeechModel::token_text`] gives its text).
    pub id: i32,
    /// The probability the decoder gave it.
    pub p: f32,
    /// Its log-probability.
    pub plog: f32,
}

/// A transcribed segment: the text between two timestamps.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// Start in milliseconds from the start of the audio.
    pub t0_ms: i64,
    /// End in milliseconds.
    pub t1_ms: i64,
    /// The text (usually starting with a space).
    pub text: String,
    /// Its tokens (text and timestamps).
    pub tokens: Vec<SpeechToken>,
    /// Probability of no speech at the window's first step.
    pub no_speech_prob: f32,
}

/// The result of [`SpeechModel::transcribe`].
#[derive(Debug, Clone, PartialEq)]
pub struct Transcription {
    /// The segments, in order.
    pub segments: Vec<Segment>,
    /// The whole text.
    pub text: String,
    /// The language decoded with (the detected one for "auto").
    pub language: String,
}

fn segment_from(s: &sys::zf_speech_segment) -> Segment {
    let text = if s.text.is_null() || s.text_len == 0 {
        String::new()
    } else {
        // SAFETY: text holds text_len bytes, valid while the segment is.
        let b = unsafe { std::slice::from_raw_parts(s.text.cast::<u8>(), s.text_len) };
        String::from_utf8_lossy(b).into_owned()
    };
    let tokens = if s.tokens.is_null() || s.n_tokens == 0 {
        Vec::new()
    } else {
        // SAFETY: tokens holds n_tokens entries, valid while the segment is.
        unsafe { std::slice::from_raw_parts(s.tokens, s.n_tokens) }
            .iter()
            .map(|t| SpeechToken {
                id: t.id,
                p: t.p,
                plog: t.plog,
            })
            .collect()
    };
    Segment {
        t0_ms: s.t0_ms,
        t1_ms: s.t1_ms,
        text,
        tokens,
        no_speech_prob: s.no_speech_prob,
    }
}

struct SegmentState<'f> {
    f: &'f mut dyn FnMut(&Segment) -> ControlFlow<()>,
    panic: Option<Box<dyn Any + Send + 'static>>,
}

/// The zf_segment_cb: forwards a segment to the closure; a panic stops decoding and is kept for
/// the caller (it never unwinds into C).
unsafe extern "C" fn segment_trampoline(
    user_data: *mut c_void,
    seg: *const sys::zf_speech_segment,
) -> i32 {
    // SAFETY: user_data is the &mut SegmentState passed to zf_transcribe, alive for the call;
    // seg is valid during this callback.
    let state = unsafe { &mut *user_data.cast::<SegmentState<'_>>() };
    if state.panic.is_some() {
        return 1;
    }
    let s = segment_from(unsafe { &*seg });
    let f = &mut state.f;
    match panic::catch_unwind(AssertUnwindSafe(|| f(&s))) {
        Ok(ControlFlow::Continue(())) => 0,
        Ok(ControlFlow::Break(())) => 1,
        Err(payload) => {
            state.panic = Some(payload);
            1
        }
    }
}

impl SpeechModel {
    /// Loads a whisper.cpp ggml `.bin` model. A GGUF file, a truncated or malformed one fails
    /// with [`ErrorCode::Format`] and a message naming the problem.
    pub fn load(path: impl AsRef<Path>) -> Result<SpeechModel> {
        crate::init()?;
        let path = path.as_ref();
        #[cfg(unix)]
        let bytes = {
            use std::os::unix::ffi::OsStrExt;
            path.as_os_str().as_bytes().to_vec()
        };
        #[cfg(not(unix))]
        let bytes = path.to_string_lossy().into_owned().into_bytes();
        let c_path = CString::new(bytes).map_err(|_| {
            Error::new(ErrorCode::InvalidArgument, "model path contains a NUL byte")
        })?;
        let mut out = ptr::null_mut();
        // SAFETY: the path is valid for the call; out receives an owned handle.
        check(unsafe { sys::zf!(zf_speech_load(c_path.as_ptr(), 0, &mut out)) })?;
        NonNull::new(out)
            .map(|ptr| SpeechModel { ptr })
            .ok_or_else(|| Error::new(ErrorCode::Internal, "zf_speech_load returned NULL"))
    }

    /// Vocabulary, mel bins, layers, whether it is multilingual.
    pub fn info(&self) -> Result<SpeechInfo> {
        // SAFETY: a zeroed POD struct with struct_size set, filled by the call.
        let mut s: sys::zf_speech_summary = unsafe { std::mem::zeroed() };
        s.struct_size = std::mem::size_of::<sys::zf_speech_summary>() as u32;
        check(unsafe { sys::zf!(zf_speech_info(self.ptr.as_ptr(), &mut s)) })?;
        Ok(SpeechInfo {
            n_vocab: s.n_vocab,
            n_mels: s.n_mels,
            n_audio_layer: s.n_audio_layer,
            n_text_layer: s.n_text_layer,
            n_audio_state: s.n_audio_state,
            multilingual: s.multilingual != 0,
        })
    }

    /// The text of a token ("" for special and timestamp tokens).
    pub fn token_text(&self, id: i32) -> Result<String> {
        let b = read_buffer(true, |buf, cap, needed| unsafe {
            sys::zf!(zf_speech_token_text(
                self.ptr.as_ptr(),
                id,
                buf,
                cap,
                needed
            ))
        })?;
        Ok(String::from_utf8_lossy(&b).into_owned())
    }

    /// Transcribes 16 kHz mono PCM (see [`decode_wav`]) greedily with timestamps, as
    /// whisper.cpp does.
    pub fn transcribe(&self, pcm: &[f32], o: &TranscribeOptions) -> Result<Transcription> {
        self.transcribe_with(pcm, o, |_| ControlFlow::Continue(()))
    }

    /// As [`transcribe`](Self::transcribe), handing each segment to `f` as soon as it is decoded;
    /// `ControlFlow::Break` stops early (the result then holds the segments so far).
    pub fn transcribe_with(
        &self,
        pcm: &[f32],
        o: &TranscribeOptions,
        mut f: impl FnMut(&Segment) -> ControlFlow<()>,
    ) -> Result<Transcription> {
        // SAFETY: a zeroed POD struct, filled with defaults by the call.
        let mut p: sys::zf_transcribe_params = unsafe { std::mem::zeroed() };
        check(unsafe {
            sys::zf!(zf_transcribe_params_init(
                &mut p,
                std::mem::size_of::<sys::zf_transcribe_params>()
            ))
        })?;
        let language = match &o.language {
            Some(l) => Some(crate::model::c_string("language", l)?),
            None => None,
        };
        p.n_threads = o.n_threads;
        p.language = language.as_ref().map_or(ptr::null(), |l| l.as_ptr());
        if o.translate {
            p.flags |= sys::ZF_TRANSCRIBE_TRANSLATE as u32;
        }
        if o.no_timestamps {
            p.flags |= sys::ZF_TRANSCRIBE_NO_TIMESTAMPS as u32;
        }
        let mut state = SegmentState {
            f: &mut f,
            panic: None,
        };
        let mut out = ptr::null_mut();
        // SAFETY: pcm, params and state are valid for the call; the callback gets &mut state.
        let st = unsafe {
            sys::zf!(zf_transcribe(
                self.ptr.as_ptr(),
                pcm.as_ptr(),
                pcm.len(),
                &p,
                Some(segment_trampoline),
                (&mut state as *mut SegmentState<'_>).cast(),
                &mut out
            ))
        };
        let err = if st == sys::ZF_OK {
            None
        } else {
            Some(Error::last(st))
        };
        let result = NonNull::new(out);
        let free = |r: Option<NonNull<sys::zf_transcription>>| {
            if let Some(r) = r {
                // SAFETY: r is the result zf_transcribe returned, freed once.
                unsafe { sys::zf!(zf_transcription_free(r.as_ptr())) }
            }
        };
        if let Some(payload) = state.panic {
            free(result);
            panic::resume_unwind(payload);
        }
        if let Some(e) = err {
            free(result);
            return Err(e);
        }
        let r = result
            .ok_or_else(|| Error::new(ErrorCode::Internal, "zf_transcribe returned no result"))?;
        let read = || -> Result<Transcription> {
            // SAFETY: r is a live result for these calls.
            let n = unsafe { sys::zf!(zf_transcription_n_segments(r.as_ptr())) };
            let mut segments = Vec::with_capacity(n);
            for i in 0..n {
                let mut s: sys::zf_speech_segment = unsafe { std::mem::zeroed() };
                s.struct_size = std::mem::size_of::<sys::zf_speech_segment>() as u32;
                check(unsafe { sys::zf!(zf_transcription_segment(r.as_ptr(), i, &mut s)) })?;
                segments.push(segment_from(&s));
            }
            let text = read_buffer(true, |buf, cap, needed| unsafe {
                sys::zf!(zf_transcription_text(r.as_ptr(), buf, cap, needed))
            })?;
            let language = read_buffer(true, |buf, cap, needed| unsafe {
                sys::zf!(zf_transcription_language(r.as_ptr(), buf, cap, needed))
            })?;
            Ok(Transcription {
                segments,
                text: String::from_utf8_lossy(&text).into_owned(),
                language: String::from_utf8_lossy(&language).into_owned(),
            })
        };
        let t = read();
        free(Some(r));
        t
    }
}

/// Decodes a WAV file's bytes into 16 kHz mono PCM (integer 8/16/24/32-bit or float 32/64-bit,
/// any channels and rate). Bad bytes fail with [`ErrorCode::InvalidArgument`] naming the problem.
pub fn decode_wav(bytes: &[u8]) -> Result<Vec<f32>> {
    crate::init()?;
    let mut n = 0usize;
    // SAFETY: bytes is valid for the call; a NULL buffer of capacity 0 asks for the size.
    let st = unsafe {
        sys::zf!(zf_wav_decode(
            bytes.as_ptr().cast(),
            bytes.len(),
            ptr::null_mut(),
            0,
            &mut n
        ))
    };
    if st != sys::ZF_ERR_BUFFER_TOO_SMALL {
        check(st)?;
        return Ok(Vec::new());
    }
    let mut pcm = vec![0f32; n];
    check(unsafe {
        sys::zf!(zf_wav_decode(
            bytes.as_ptr().cast(),
            bytes.len(),
            pcm.as_mut_ptr(),
            pcm.len(),
            &mut n
        ))
    })?;
    pcm.truncate(n);
    Ok(pcm)
}
