//! Safe, idiomatic Rust API for [zerfoo](https://github.com/zerfoo/zerfoo): load GGUF models,
//! tokenize, apply chat templates, and generate text whole, through a streaming callback, or
//! as an iterator.
//!
//! ```no_run
//! use zerfoo::{GenerateOptions, Model, ModelOptions, SessionOptions};
//! let model = Model::load("smollm2-135m-instruct-q4_1.gguf", &ModelOptions::default())?;
//! let mut session = model.session(&SessionOptions::default())?;
//! let out = session.generate("The capital of France is", &GenerateOptions::greedy(32))?;
//! println!("{}", out.text);
//! # Ok::<(), zerfoo::Error>(())
//! ```
//!
//! - [`Model`] is immutable, `Send + Sync` and cheap to clone: share it between threads.
//! - [`Session`] is one conversation (KV cache); it borrows its model, is `Send` but not
//!   `Sync`, and is freed on drop. Generation: [`Session::generate`] (whole text),
//!   [`Session::generate_with`] (a `FnMut(&str) -> ControlFlow<()>` callback),
//!   [`Session::stream`] (an `Iterator<Item = Result<String>>`), and with the `tokio` feature
//!   `Session::into_async_stream` (a `Stream`).
//! - Chat turns: [`Session::chat_turn`] runs an assistant turn from an OpenAI-style
//!   [`ChatRequest`] (messages, tools, tool choice, response format) as an iterator of typed
//!   [`TurnEvent`]s (content, reasoning, tool calls and their arguments, done with usage);
//!   [`Session::chat`] returns the final [`AssistantMessage`].
//! - [`Model::chat_parse`] reads a generated turn back as an OpenAI assistant message (content,
//!   reasoning, tool calls) in the format of the chat template that prompted it.
//! - [`CancelHandle`] stops a generation from any thread.
//! - Speech to text: [`SpeechModel`] (a whisper.cpp `.bin`) transcribes 16 kHz PCM
//!   ([`decode_wav`]) into [`Segment`]s with times and token probabilities.
//! - Images: [`Mmproj`] (a vision projector loaded for a model) turns an [`Image`] (file bytes or
//!   RGB pixels) into the embeddings the model takes in its prompt.
//! - Audio: an audio projector's [`Mmproj::embed_audio`] and [`Session::eval_audio`] take 16 kHz
//!   PCM; [`Message::user_with_audio`] sends WAV bytes ([`encode_wav`]) in a chat turn.
//! - Every failure is an [`Error`] with an [`ErrorCode`] and the library's message.
//!
//! The library (`libzerfoo.so.0`) is linked by `zerfoo-sys` (see its docs for
//! `ZERFOO_LIB_DIR`), or loaded at run time with the `dynamic` feature; its version is checked
//! against the bindings' header at first use.
#![warn(missing_docs)]

mod audio;
mod chat;
mod chat_request;
mod embed;
mod error;
mod lora;
mod model;
mod session;
mod speech;
mod turn;
mod vision;

#[cfg(feature = "tokio")]
mod async_stream;

#[cfg(feature = "tokio")]
pub use async_stream::AsyncPieces;
pub use audio::{
    encode_wav, AudioEmbedding, AUDIO_SAMPLE_RATE, MAX_AUDIO_SAMPLES, MIN_AUDIO_SAMPLES,
};
pub use chat::{AssistantMessage, ChatParseOptions, FunctionCall, ToolCall, ToolGrammar};
pub use chat_request::{ChatRequest, Message, ReasoningFormat, ResponseFormat, Tool, ToolChoice};
pub use embed::{EmbedOptions, Pooling};
pub use error::{Error, ErrorCode, Result};
pub use lora::{LoraAdapter, LoraInfo};
pub use model::{CacheInfo, ChatMessage, Device, FimTokens, Model, ModelInfo, ModelOptions, Token};
pub use session::{
    CancelHandle, Constraint, GenerateOptions, Generation, KvType, Pieces, Session, SessionOptions,
    StopReason, TokenLogprob, TokenLogprobs, MAX_DRAFT, MAX_LOGPROBS,
};

pub use speech::{
    decode_wav, Segment, SpeechInfo, SpeechModel, SpeechToken, TranscribeOptions, Transcription,
    Word,
};
pub use turn::{FinishReason, Turn, TurnDone, TurnEvent, TurnOptions, TurnOutcome, Usage};
pub use vision::{Image, ImageEmbedding, Mmproj, MmprojInfo, MAX_IMAGE_PIXELS};

/// The JSON library of [`ChatRequest`] (its tool schemas, template variables, raw messages).
pub use serde_json;

/// The raw bindings this crate is built on.
pub use zerfoo_sys as sys;

/// Loads (with the `dynamic` feature) and version-checks the library once per process.
/// The model for this crate's runnable documentation examples: `$ZERFOO_TEST_MODEL`, or
/// `None` (the example then does nothing) when it is not set.
#[doc(hidden)]
pub fn __doc_model() -> Option<Model> {
    let path = std::env::var_os("ZERFOO_TEST_MODEL")?;
    Some(Model::load(path, &ModelOptions::default()).expect("load $ZERFOO_TEST_MODEL"))
}

pub(crate) fn init() -> Result<()> {
    zerfoo_sys::load().map(|_| ()).map_err(Error::from)
}

/// The loaded library's version as text, e.g. `"0.3.0"`.
///
/// ```
/// assert!(zerfoo::version().unwrap().starts_with("0."));
/// ```
pub fn version() -> Result<String> {
    init()?;
    // SAFETY: zf_version_string returns a static NUL-terminated string.
    let s = unsafe { std::ffi::CStr::from_ptr(zerfoo_sys::zf!(zf_version_string())) };
    Ok(s.to_string_lossy().into_owned())
}

/// Whether a device can run on this host; the error says why not.
///
/// ```
/// assert!(zerfoo::backend_available(zerfoo::Device::Cpu).is_ok());
/// ```
pub fn backend_available(device: Device) -> Result<()> {
    init()?;
    error::check(unsafe { zerfoo_sys::zf!(zf_backend_available(device.raw())) })
}
