//! Speech to text with Whisper (whisper.cpp's ggml `.bin` files): [`SpeechModel::load`],
//! [`SpeechModel::transcribe`] (segments with times and token probabilities, each also handed to
//! a callback as it is decoded), and [`decode_wav`] for WAV bytes.
use std::any::Any;
use std::ffi::c_void;
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

/// Options of [`SpeechModel::transcribe`]. `Default` is whisper.cpp's
/// `whisper_full_default_params(GREEDY)`: English, timestamps, greedy, the temperature fallback
/// in 0.2 steps with best of 5.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TranscribeOptions {
    /// Worker threads; 0 = the hardware's (at most 8).
    pub n_threads: i32,
    /// A Whisper language code ("en", "de", ...), "auto" (multilingual models), or `None` ("en").
    pub language: Option<String>,
    /// Translate into English (multilingual models).
    pub translate: bool,
    /// Decode without timestamps (one segment per 30 s window).
    pub no_timestamps: bool,
    /// Initial prompt: text the first window continues from.
    pub prompt: Option<String>,
    /// Keep the prompt in front of every window's prompt.
    pub carry_prompt: bool,
    /// Token start/end times ([`SpeechToken::t0_ms`]) and [`Segment::words`].
    pub word_timestamps: bool,
    /// Do not offer the previous window's text as the next one's prompt.
    pub no_context: bool,
    /// First temperature in [0, 1]; 0: greedy or beam search.
    pub temperature: f32,
    /// Fallback step (`None`: 0.2; `Some(0.0)`: no fallback).
    pub temperature_inc: Option<f32>,
    /// Beam search with this many beams when > 1 (at most 8); whisper-cli uses 5.
    pub beam_size: i32,
    /// Sequences sampled above temperature 0 (`None`: 5).
    pub best_of: Option<i32>,
    /// Sequence j samples from `std::mt19937(seed + j)`: the same seed, the same transcript.
    pub seed: u32,
    /// `None`: whisper.cpp's -1 (score = average log-probability).
    pub length_penalty: Option<f32>,
    /// `None`: 2.4.
    pub entropy_thold: Option<f32>,
    /// `None`: -1.
    pub logprob_thold: Option<f32>,
    /// `None`: 0.6.
    pub no_speech_thold: Option<f32>,
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
    /// Start in milliseconds with [`TranscribeOptions::word_timestamps`]; else 0.
    pub t0_ms: i64,
    /// End in milliseconds with [`TranscribeOptions::word_timestamps`]; else 0.
    pub t1_ms: i64,
}

/// A word: a segment's text tokens joined at a leading space.
#[derive(Debug, Clone, PartialEq)]
pub struct Word {
    /// With its leading space.
    pub text: String,
    /// Start in milliseconds.
    pub t0_ms: i64,
    /// End in milliseconds.
    pub t1_ms: i64,
    /// The lowest probability among its tokens.
    pub p: f32,
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
    /// With [`TranscribeOptions::word_timestamps`]: the words.
    pub words: Vec<Word>,
    /// The temperature the window was decoded at (above the first: a fallback).
    pub temperature: f32,
    /// Average log-probability of the window's tokens.
    pub avg_logprob: f32,
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
    /// The detected language's probability ("auto"); 0 when the language was given.
    pub language_prob: f32,
}

fn lossy(p: *const std::ffi::c_char, n: usize) -> String {
    if p.is_null() || n == 0 {
        return String::new();
    }
    // SAFETY: the library gives n bytes at p, valid while the segment is.
    let b = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), n) };
    String::from_utf8_lossy(b).into_owned()
}

fn segment_from(s: &sys::zf_speech_segment) -> Segment {
    let text = lossy(s.text, s.text_len);
    let mut tokens: Vec<SpeechToken> = if s.tokens.is_null() || s.n_tokens == 0 {
        Vec::new()
    } else {
        // SAFETY: tokens holds n_tokens entries, valid while the segment is.
        unsafe { std::slice::from_raw_parts(s.tokens, s.n_tokens) }
            .iter()
            .map(|t| SpeechToken {
                id: t.id,
                p: t.p,
                plog: t.plog,
                t0_ms: 0,
                t1_ms: 0,
            })
            .collect()
    };
    if !s.token_times.is_null() {
        // SAFETY: token_times holds n_tokens entries, valid while the segment is.
        let times = unsafe { std::slice::from_raw_parts(s.token_times, tokens.len()) };
        for (t, tt) in tokens.iter_mut().zip(times) {
            (t.t0_ms, t.t1_ms) = (tt.t0_ms, tt.t1_ms);
        }
    }
    let words = if s.words.is_null() || s.n_words == 0 {
        Vec::new()
    } else {
        // SAFETY: words holds n_words entries, valid while the segment is.
        unsafe { std::slice::from_raw_parts(s.words, s.n_words) }
            .iter()
            .map(|w| Word {
                text: lossy(w.text, w.text_len),
                t0_ms: w.t0_ms,
                t1_ms: w.t1_ms,
                p: w.p,
            })
            .collect()
    };
    Segment {
        t0_ms: s.t0_ms,
        t1_ms: s.t1_ms,
        text,
        tokens,
        no_speech_prob: s.no_speech_prob,
        words,
        temperature: s.temperature,
        avg_logprob: s.avg_logprob,
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
        let c_path = crate::model::c_path(path, "model")?;
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

    /// Transcribes 16 kHz mono PCM (see [`decode_wav`]) with timestamps, as whisper.cpp's
    /// `whisper_full` does (greedy or beam search, the temperature fallback).
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
        if o.word_timestamps {
            p.flags |= sys::ZF_TRANSCRIBE_WORD_TIMESTAMPS as u32;
        }
        if o.carry_prompt {
            p.flags |= sys::ZF_TRANSCRIBE_CARRY_PROMPT as u32;
        }
        let prompt = match &o.prompt {
            Some(t) => Some(crate::model::c_string("prompt", t)?),
            None => None,
        };
        p.initial_prompt = prompt.as_ref().map_or(ptr::null(), |t| t.as_ptr());
        if o.no_context {
            p.n_max_text_ctx = 0;
        }
        p.temperature = o.temperature;
        p.temperature_inc = o.temperature_inc.unwrap_or(p.temperature_inc);
        p.beam_size = o.beam_size;
        p.best_of = o.best_of.unwrap_or(p.best_of);
        p.seed = o.seed;
        p.length_penalty = o.length_penalty.unwrap_or(p.length_penalty);
        p.entropy_thold = o.entropy_thold.unwrap_or(p.entropy_thold);
        p.logprob_thold = o.logprob_thold.unwrap_or(p.logprob_thold);
        p.no_speech_thold = o.no_speech_thold.unwrap_or(p.no_speech_thold);
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
            let mut language_prob = 0f32;
            check(unsafe {
                sys::zf!(zf_transcription_language_prob(
                    r.as_ptr(),
                    &mut language_prob
                ))
            })?;
            Ok(Transcription {
                segments,
                text: String::from_utf8_lossy(&text).into_owned(),
                language: String::from_utf8_lossy(&language).into_owned(),
                language_prob,
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
