//! Sessions and generation: whole text, a streaming callback, or a pull-style iterator.
use std::any::Any;
use std::cell::Cell;
use std::ffi::{c_char, c_void, CString};
use std::marker::PhantomData;
use std::ops::ControlFlow;
use std::panic::{self, AssertUnwindSafe};
use std::ptr::{self, NonNull};
use std::sync::Arc;
use std::time::Duration;

use zerfoo_sys as sys;

use crate::error::{check, Error, ErrorCode, Result};
use crate::model::{c_string, Model, Token};

/// The KV cache's element type.
#[non_exhaustive]
#[allow(non_camel_case_types)] // ggml's names
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum KvType {
    /// 16-bit floats (half the memory).
    #[default]
    F16,
    /// 32-bit floats.
    F32,
    /// ggml's Q8_0 blocks: 8.5 bits per element (CPU engine; head sizes a multiple of 32).
    Q8_0,
    /// ggml's Q4_0 blocks: 4.5 bits per element (as [`KvType::Q8_0`]).
    Q4_0,
}

impl KvType {
    fn raw(self) -> i32 {
        match self {
            KvType::F16 => sys::ZF_KV_F16,
            KvType::F32 => sys::ZF_KV_F32,
            KvType::Q8_0 => sys::ZF_KV_Q8_0,
            KvType::Q4_0 => sys::ZF_KV_Q4_0,
        }
    }
}

/// Options for [`Model::session`]. Build with `..Default::default()`.
///
/// ```
/// let opts = zerfoo::SessionOptions { n_ctx: 1024, n_threads: 2, ..Default::default() };
/// assert_eq!(opts.kv_type, zerfoo::KvType::F16);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SessionOptions {
    /// Context length in tokens; 0 = min(training context, 4096).
    pub n_ctx: i32,
    /// CPU threads; 0 = the model's default.
    pub n_threads: i32,
    /// KV cache element type (K's, and V's unless `kv_type_v` is set).
    pub kv_type: KvType,
    /// V's element type when it differs from K's (llama.cpp's `-ctv`); `None` = `kv_type`.
    ///
    /// ```
    /// let opts = zerfoo::SessionOptions {
    ///     kv_type: zerfoo::KvType::Q8_0,
    ///     kv_type_v: Some(zerfoo::KvType::F16),
    ///     ..Default::default()
    /// };
    /// assert_eq!(opts.kv_type_v, Some(zerfoo::KvType::F16));
    /// ```
    pub kv_type_v: Option<KvType>,
    /// Prefill with the fastest kernels instead of the exact ones (`ZF_SESSION_FAST_PREFILL`).
    /// By default (false) a session evaluates a prompt so that every position's logits are bit
    /// for bit the same however the prompt arrives (in one call, in pieces, one token at a time,
    /// after a prefix copied from the model's prefix cache, batched with other sessions). With
    /// true, prompts of 8 tokens or more use the multi-token kernels (faster prefill), whose
    /// results differ from the one-token path in the last bits; such a session neither reads nor
    /// fills the prefix cache ([`ModelOptions::prefix_cache_mib`](crate::ModelOptions::prefix_cache_mib)).
    ///
    /// ```
    /// let opts = zerfoo::SessionOptions { fast_prefill: true, ..Default::default() };
    /// assert!(opts.fast_prefill);
    /// ```
    pub fast_prefill: bool,
}

/// Sampling and stopping options for generation. [`GenerateOptions::default`] has the
/// library's defaults (temperature 0.8, top-k 40, top-p 0.95, min-p 0.05, 256 tokens, a random
/// seed); [`GenerateOptions::greedy`] is deterministic.
///
/// ```
/// use zerfoo::GenerateOptions;
/// let opts = GenerateOptions { stop: vec!["\n".into()], ..GenerateOptions::greedy(64) };
/// assert_eq!(opts.temperature, 0.0);
/// assert_eq!(opts.max_tokens, Some(64));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateOptions {
    /// Tokens to generate at most; `None` = until the context is full.
    pub max_tokens: Option<u32>,
    /// 0 = greedy.
    pub temperature: f32,
    /// Keep the k most likely tokens (0 = off).
    pub top_k: i32,
    /// Nucleus threshold (1 = off).
    pub top_p: f32,
    /// Drop tokens below `min_p * p(max)` (0 = off).
    pub min_p: f32,
    /// Above 1 penalizes repeats (1 = off).
    pub repeat_penalty: f32,
    /// Window for the repeat penalty.
    pub repeat_last_n: i32,
    /// RNG seed; `None` = random.
    pub seed: Option<u64>,
    /// Stop strings: generation ends when one appears; it is never emitted.
    pub stop: Vec<String>,
    /// Add BOS/special tokens at the start of a conversation (default true).
    pub add_special: bool,
    /// Parse special-token text in the prompt as tokens (default true).
    pub parse_special: bool,
    /// Keep generating past EOS/EOT (default false).
    pub ignore_eos: bool,
    /// Report each generated token's log-probability and this many most likely alternatives
    /// (0 = off, the default; at most [`MAX_LOGPROBS`]): in [`Generation::logprobs`] and
    /// [`Pieces::piece_logprobs`]. The values are the log-softmax of the model's raw logits
    /// (before penalties, temperature and the top-k/top-p/min-p filters).
    pub logprobs: u32,
    /// Constrained decoding (default `None`): the generated text is exactly a text the
    /// [`Constraint`] accepts. It covers this call only and is compiled before the prompt is
    /// evaluated: an invalid one is [`ErrorCode::InvalidArgument`] with the compiler's message
    /// (nothing evaluated), a library built without constraints gives
    /// [`ErrorCode::Unsupported`]. A complete text ends with [`StopReason::Eos`];
    /// [`StopReason::MaxTokens`] can still cut it short, so check the stop reason before parsing.
    pub constraint: Option<Constraint>,
    /// A lazy constraint (`zf_generate_params.constraint_trigger`, default `None`): the output
    /// is free until this text first appears in it, and from where it starts the rest must match
    /// `constraint` (a tool call opened in free text: see [`Model::chat_tool_grammar`]).
    /// Without a constraint it is [`ErrorCode::InvalidArgument`].
    pub constraint_trigger: Option<String>,
    /// Speculative decoding by prompt lookup (`zf_generate_params.draft_max`; 0 = off, the
    /// default; at most [`MAX_DRAFT`]): at each step up to this many tokens are drafted from
    /// an earlier occurrence of the text's last tokens in the prompt and output and verified in
    /// one pass; the output is token for token the output without drafts. It pays off when the
    /// answer repeats the prompt (code edits, quotes, extraction). Ignored on batched models,
    /// fast-prefill sessions and the CUDA engine. [`Generation::drafted_tokens`] and
    /// [`Generation::accepted_tokens`] report what it did.
    pub draft_max: u32,
    /// No draft at a step when fewer tokens than this are found (`draft_min`; 0 = 1).
    pub draft_min: u32,
}

/// A constraint on the generated text (`zf_generate_params.constraint` and
/// `constraint_kind`; the library's doc/constraints.md). Check one without generating with
/// [`Model::check_constraint`].
///
/// ```
/// use zerfoo::{Constraint, GenerateOptions};
/// let opts = GenerateOptions::greedy(64).with_constraint(Constraint::Regex("[0-9]{2}".into()));
/// assert_eq!(opts.constraint, Some(Constraint::Regex("[0-9]{2}".into())));
/// assert_eq!(Constraint::Choice(vec!["a".into(), "b\"c".into()]).text(), r#"["a","b\"c"]"#);
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Constraint {
    /// A JSON schema (llguidance's JSON Schema subset): the output is JSON matching it
    /// (`ZF_CONSTRAINT_JSON_SCHEMA`).
    JsonSchema(String),
    /// A regular expression (Rust regex syntax) matching the whole output
    /// (`ZF_CONSTRAINT_REGEX`).
    Regex(String),
    /// The output is exactly one of these strings (`ZF_CONSTRAINT_CHOICE`; an empty list is
    /// [`ErrorCode::InvalidArgument`]).
    Choice(Vec<String>),
    /// A Lark grammar (llguidance's dialect, with a `start` rule; GBNF is not supported)
    /// (`ZF_CONSTRAINT_LARK`).
    Lark(String),
}

impl Constraint {
    /// The `ZF_CONSTRAINT_*` kind.
    pub fn kind(&self) -> i32 {
        match self {
            Constraint::JsonSchema(_) => sys::ZF_CONSTRAINT_JSON_SCHEMA,
            Constraint::Regex(_) => sys::ZF_CONSTRAINT_REGEX,
            Constraint::Choice(_) => sys::ZF_CONSTRAINT_CHOICE,
            Constraint::Lark(_) => sys::ZF_CONSTRAINT_LARK,
        }
    }

    /// The text the library is given: the schema, regex or grammar, or for
    /// [`Constraint::Choice`] a JSON array of the strings.
    pub fn text(&self) -> String {
        match self {
            Constraint::JsonSchema(t) | Constraint::Regex(t) | Constraint::Lark(t) => t.clone(),
            Constraint::Choice(choices) => {
                let mut out = String::from("[");
                for (i, c) in choices.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    json_string(&mut out, c);
                }
                out.push(']');
                out
            }
        }
    }

    /// The text as a C string (a NUL byte in it is [`ErrorCode::InvalidArgument`]).
    pub(crate) fn c_text(&self) -> Result<CString> {
        c_string("constraint", &self.text())
    }
}

/// Appends `s` as a JSON string literal.
fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The most tokens [`GenerateOptions::draft_max`] may draft per step (`ZF_MAX_DRAFT`).
pub const MAX_DRAFT: u32 = sys::ZF_MAX_DRAFT as u32;

/// The most alternatives [`GenerateOptions::logprobs`] may ask for (`ZF_MAX_LOGPROBS`).
pub const MAX_LOGPROBS: u32 = sys::ZF_MAX_LOGPROBS as u32;

/// A token id and its natural-log probability.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenLogprob {
    /// The token.
    pub token: Token,
    /// ln p(token); negative infinity for a token the model rules out.
    pub logprob: f32,
}

/// One generated token's log-probability and the most likely alternatives, in descending order
/// (ties to the lower id; the token itself is among them when it is that likely).
#[derive(Debug, Clone, PartialEq)]
pub struct TokenLogprobs {
    /// The generated token and its log-probability.
    pub chosen: TokenLogprob,
    /// The most likely tokens at that position, [`GenerateOptions::logprobs`] of them.
    pub top: Vec<TokenLogprob>,
}

/// The log-probabilities behind the piece of text delivered last (`zf_session_logprobs`):
/// every token sampled since the previous piece, in order (a piece may complete several).
pub(crate) fn piece_logprobs(session: *mut sys::zf_session) -> Result<Vec<TokenLogprobs>> {
    let (mut n, mut stride) = (0usize, 0usize);
    let mut buf: Vec<sys::zf_token_logprob> = Vec::new();
    loop {
        // SAFETY: the session is alive; buf holds buf.len() writable entries.
        let st = unsafe {
            sys::zf!(zf_session_logprobs(
                session,
                if buf.is_empty() {
                    ptr::null_mut()
                } else {
                    buf.as_mut_ptr()
                },
                buf.len(),
                &mut n,
                &mut stride
            ))
        };
        if st == sys::ZF_ERR_BUFFER_TOO_SMALL && n > buf.len() {
            buf.resize(
                n,
                sys::zf_token_logprob {
                    token: 0,
                    logprob: 0.0,
                },
            );
            continue;
        }
        check(st)?;
        break;
    }
    if stride == 0 {
        return Ok(Vec::new());
    }
    let conv = |e: &sys::zf_token_logprob| TokenLogprob {
        token: e.token,
        logprob: e.logprob,
    };
    Ok(buf[..n]
        .chunks_exact(stride)
        .map(|c| TokenLogprobs {
            chosen: conv(&c[0]),
            top: c[1..].iter().map(conv).collect(),
        })
        .collect())
}

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions {
            max_tokens: Some(256),
            temperature: 0.8,
            top_k: 40,
            top_p: 0.95,
            min_p: 0.05,
            repeat_penalty: 1.0,
            repeat_last_n: 64,
            seed: None,
            stop: Vec::new(),
            add_special: true,
            parse_special: true,
            ignore_eos: false,
            logprobs: 0,
            constraint: None,
            constraint_trigger: None,
            draft_max: 0,
            draft_min: 0,
        }
    }
}

impl GenerateOptions {
    /// Greedy decoding (temperature 0) of at most `max_tokens` tokens.
    pub fn greedy(max_tokens: u32) -> GenerateOptions {
        GenerateOptions {
            max_tokens: Some(max_tokens),
            temperature: 0.0,
            ..Default::default()
        }
    }

    /// These options with `constraint` (see [`GenerateOptions::constraint`]).
    pub fn with_constraint(self, constraint: Constraint) -> GenerateOptions {
        GenerateOptions {
            constraint: Some(constraint),
            ..self
        }
    }
}

/// The C params plus the strings they point to (kept alive for the call).
pub(crate) struct RawParams {
    pub(crate) p: sys::zf_generate_params,
    _stop: Vec<CString>,
    _stop_ptrs: Vec<*const c_char>,
    _constraint: Option<CString>,
    _trigger: Option<CString>,
}

impl RawParams {
    pub(crate) fn new(o: &GenerateOptions) -> Result<RawParams> {
        // SAFETY: zf_generate_params_init fills the struct it is given.
        let mut p: sys::zf_generate_params = unsafe { std::mem::zeroed() };
        check(unsafe {
            sys::zf!(zf_generate_params_init(
                &mut p,
                std::mem::size_of::<sys::zf_generate_params>()
            ))
        })?;
        p.max_tokens = match o.max_tokens {
            Some(n) => i32::try_from(n).unwrap_or(i32::MAX),
            None => -1,
        };
        p.temperature = o.temperature;
        p.top_k = o.top_k;
        p.top_p = o.top_p;
        p.min_p = o.min_p;
        p.repeat_penalty = o.repeat_penalty;
        p.repeat_last_n = o.repeat_last_n;
        p.seed = o.seed.unwrap_or(u64::MAX);
        let mut flags = 0u32;
        if !o.add_special {
            flags |= sys::ZF_GENERATE_NO_SPECIAL as u32;
        }
        if !o.parse_special {
            flags |= sys::ZF_GENERATE_NO_PARSE_SPECIAL as u32;
        }
        if o.ignore_eos {
            flags |= sys::ZF_GENERATE_IGNORE_EOS as u32;
        }
        p.flags = flags;
        p.n_logprobs = i32::try_from(o.logprobs).unwrap_or(i32::MAX);
        p.draft_max = i32::try_from(o.draft_max).unwrap_or(i32::MAX);
        p.draft_min = i32::try_from(o.draft_min).unwrap_or(i32::MAX);
        let stop: Vec<CString> = o
            .stop
            .iter()
            .map(|s| c_string("stop string", s))
            .collect::<Result<_>>()?;
        let stop_ptrs: Vec<*const c_char> = stop.iter().map(|s| s.as_ptr()).collect();
        if !stop_ptrs.is_empty() {
            p.stop = stop_ptrs.as_ptr();
            p.n_stop = stop_ptrs.len();
        }
        let constraint = o.constraint.as_ref().map(Constraint::c_text).transpose()?;
        if let (Some(c), Some(text)) = (&o.constraint, &constraint) {
            p.constraint = text.as_ptr();
            p.constraint_kind = c.kind();
        }
        let trigger = o
            .constraint_trigger
            .as_deref()
            .map(|t| c_string("constraint_trigger", t))
            .transpose()?;
        if let Some(t) = &trigger {
            p.constraint_trigger = t.as_ptr();
        }
        Ok(RawParams {
            p,
            _stop: stop,
            _stop_ptrs: stop_ptrs,
            _constraint: constraint,
            _trigger: trigger,
        })
    }
}

/// Why a generation ended.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// The model produced end-of-sequence / end-of-turn.
    Eos,
    /// `max_tokens` reached.
    MaxTokens,
    /// A stop string matched (it is not part of the text).
    StopString,
    /// The caller stopped: a callback returned `Break`, or an iterator was dropped.
    Callback,
    /// [`CancelHandle::cancel`] was called.
    Cancelled,
    /// The context filled up.
    ContextFull,
    /// A reason these bindings do not know.
    Other(i32),
}

impl StopReason {
    pub(crate) fn from_raw(v: i32) -> StopReason {
        match v {
            sys::ZF_STOP_EOS => StopReason::Eos,
            sys::ZF_STOP_MAX_TOKENS => StopReason::MaxTokens,
            sys::ZF_STOP_STRING => StopReason::StopString,
            sys::ZF_STOP_CALLBACK => StopReason::Callback,
            sys::ZF_STOP_CANCELLED => StopReason::Cancelled,
            sys::ZF_STOP_CONTEXT_FULL => StopReason::ContextFull,
            other => StopReason::Other(other),
        }
    }
}

/// The outcome of a generation: its text, stop reason, token counts and timings.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Generation {
    /// The generated text (for a callback or iterator: the pieces delivered, concatenated).
    pub text: String,
    /// Why generation ended.
    pub stop_reason: StopReason,
    /// Prompt tokens evaluated by this call.
    pub prompt_tokens: usize,
    /// Tokens sampled by this call.
    pub generated_tokens: usize,
    /// Prefill wall time.
    pub prompt_time: Duration,
    /// Decode wall time (for an iterator: only the time spent producing pieces).
    pub decode_time: Duration,
    /// With [`GenerateOptions::logprobs`]: one entry per generated token whose text was
    /// delivered, in order (empty otherwise).
    pub logprobs: Vec<TokenLogprobs>,
    /// Tokens drafted with [`GenerateOptions::draft_max`] (0 without drafts).
    pub drafted_tokens: usize,
    /// Drafted tokens kept (each spared a decode step).
    pub accepted_tokens: usize,
}

impl Generation {
    pub(crate) fn from_raw(text: String, r: &sys::zf_generate_result) -> Generation {
        Generation {
            text,
            stop_reason: StopReason::from_raw(r.stop_reason),
            prompt_tokens: r.n_prompt.max(0) as usize,
            generated_tokens: r.n_generated.max(0) as usize,
            prompt_time: Duration::from_secs_f64(r.prompt_ms.max(0.0) / 1000.0),
            decode_time: Duration::from_secs_f64(r.decode_ms.max(0.0) / 1000.0),
            logprobs: Vec::new(),
            drafted_tokens: r.n_drafted.max(0) as usize,
            accepted_tokens: r.n_accepted.max(0) as usize,
        }
    }

    /// Decode speed in tokens per second (0 when nothing was decoded).
    pub fn tokens_per_second(&self) -> f64 {
        let s = self.decode_time.as_secs_f64();
        if s > 0.0 {
            self.generated_tokens as f64 / s
        } else {
            0.0
        }
    }
}

pub(crate) fn empty_result() -> sys::zf_generate_result {
    // SAFETY: an all-zero zf_generate_result is a valid value.
    let mut r: sys::zf_generate_result = unsafe { std::mem::zeroed() };
    r.struct_size = std::mem::size_of::<sys::zf_generate_result>() as u32;
    r
}

pub(crate) struct SessionInner {
    pub(crate) ptr: NonNull<sys::zf_session>,
    _model: Model, // a session must be freed before its model
}

// SAFETY: a zf_session may move between threads; shared references are only used for
// zf_session_cancel, which is safe from any thread at any time (zerfoo.h).
unsafe impl Send for SessionInner {}
unsafe impl Sync for SessionInner {}

impl Drop for SessionInner {
    fn drop(&mut self) {
        // SAFETY: the last owner; no call using the session can be running.
        unsafe { sys::zf!(zf_session_free(self.ptr.as_ptr())) }
    }
}

/// One conversation over a [`Model`]: its KV cache and sampler state. Successive
/// generations continue the conversation until [`reset`](Session::reset).
///
/// A session borrows its model (`Session<'m>`), so it can never outlive it, and it is `Send`
/// but not `Sync`: it moves between threads but is used by one at a time. Stop a running
/// generation from another thread with a [`CancelHandle`].
///
/// A session cannot outlive its model:
///
/// ```compile_fail
/// use zerfoo::{Model, ModelOptions, SessionOptions};
/// let session = {
///     let model = Model::load("m.gguf", &ModelOptions::default()).unwrap();
///     model.session(&SessionOptions::default()).unwrap()
/// }; // error: `model` does not live long enough
/// ```
///
/// and is not `Sync`:
///
/// ```compile_fail
/// fn shared<T: Sync>(_: &T) {}
/// let model = zerfoo::Model::load("m.gguf", &Default::default()).unwrap();
/// let session = model.session(&Default::default()).unwrap();
/// shared(&session); // error: `Cell<()>` cannot be shared between threads safely
/// ```
///
/// while it is `Send` and the model is `Send + Sync`:
///
/// ```
/// fn send<T: Send>() {}
/// fn send_sync<T: Send + Sync>() {}
/// send::<zerfoo::Session<'static>>();
/// send_sync::<zerfoo::Model>();
/// send_sync::<zerfoo::CancelHandle>();
/// ```
pub struct Session<'m> {
    pub(crate) inner: Arc<SessionInner>,
    _model: PhantomData<&'m Model>,
    _not_sync: PhantomData<Cell<()>>,
}

impl std::fmt::Debug for Session<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("ptr", &self.inner.ptr)
            .finish()
    }
}

struct CallbackState<'f> {
    f: &'f mut dyn FnMut(&str) -> ControlFlow<()>,
    text: String,
    panic: Option<Box<dyn Any + Send + 'static>>,
    // With GenerateOptions::logprobs: the session (to read each piece's logprobs), the
    // logprobs so far, and the first error reading them (it stops generation).
    session: Option<*mut sys::zf_session>,
    logprobs: Vec<TokenLogprobs>,
    logprobs_err: Option<Error>,
}

/// The zf_stream_cb: forwards a piece to the closure; a panic stops generation and is kept
/// for the caller (it never unwinds into C).
unsafe extern "C" fn trampoline(
    user_data: *mut c_void,
    piece: *const c_char,
    len: usize,
    _token: i32,
) -> i32 {
    // SAFETY: user_data is the &mut CallbackState passed to zf_generate, alive for the call;
    // piece holds len bytes valid during this callback.
    let state = unsafe { &mut *user_data.cast::<CallbackState<'_>>() };
    if state.panic.is_some() {
        return 1;
    }
    let bytes = if len == 0 {
        &[][..]
    } else {
        unsafe { std::slice::from_raw_parts(piece.cast::<u8>(), len) }
    };
    let text = String::from_utf8_lossy(bytes); // pieces are whole UTF-8: never lossy in practice
    state.text.push_str(&text);
    if let Some(session) = state.session {
        match piece_logprobs(session) {
            Ok(lp) => state.logprobs.extend(lp),
            Err(e) => {
                state.logprobs_err = Some(e);
                return 1;
            }
        }
    }
    let f = &mut state.f;
    match panic::catch_unwind(AssertUnwindSafe(|| f(&text))) {
        Ok(ControlFlow::Continue(())) => 0,
        Ok(ControlFlow::Break(())) => 1,
        Err(payload) => {
            state.panic = Some(payload);
            1
        }
    }
}

impl<'m> Session<'m> {
    pub(crate) fn create(model: &Model, o: &SessionOptions) -> Result<Session<'m>> {
        // SAFETY: zf_session_params_init fills the struct it is given.
        let mut p: sys::zf_session_params = unsafe { std::mem::zeroed() };
        check(unsafe {
            sys::zf!(zf_session_params_init(
                &mut p,
                std::mem::size_of::<sys::zf_session_params>()
            ))
        })?;
        p.n_ctx = o.n_ctx;
        p.n_threads = o.n_threads;
        p.kv_type = o.kv_type.raw();
        p.kv_type_v = o.kv_type_v.map_or(sys::ZF_KV_SAME, KvType::raw);
        p.flags = 0;
        if o.fast_prefill {
            p.flags |= sys::ZF_SESSION_FAST_PREFILL as u32;
        }
        let mut out = ptr::null_mut();
        // SAFETY: model is alive (we hold a clone); out receives an owned handle.
        check(unsafe { sys::zf!(zf_session_create(model.raw(), &p, &mut out)) })?;
        let ptr = NonNull::new(out)
            .ok_or_else(|| Error::new(ErrorCode::Internal, "zf_session_create returned NULL"))?;
        Ok(Session {
            inner: Arc::new(SessionInner {
                ptr,
                _model: model.clone(),
            }),
            _model: PhantomData,
            _not_sync: PhantomData,
        })
    }

    pub(crate) fn raw(&self) -> *mut sys::zf_session {
        self.inner.ptr.as_ptr()
    }

    /// A handle that stops this session's running generation from any thread.
    pub fn cancel_handle(&self) -> CancelHandle {
        CancelHandle {
            inner: Arc::clone(&self.inner),
        }
    }

    /// Clears the KV cache and history: the next generation starts a new conversation.
    pub fn reset(&mut self) -> Result<()> {
        check(unsafe { sys::zf!(zf_session_reset(self.raw())) })
    }

    /// Gives the session a draft model for speculative decoding (`zf_session_set_draft_model`):
    /// with [`GenerateOptions::draft_max`] the drafts come from `draft`'s greedy output instead of
    /// prompt lookup, and the output is still token for token the output without it. The draft
    /// must have this model's vocabulary ([`ErrorCode::InvalidArgument`] naming the first
    /// difference otherwise). The session keeps the draft model alive; `None` removes it.
    pub fn set_draft_model(&mut self, draft: Option<&Model>) -> Result<()> {
        let d = draft.map_or(ptr::null_mut(), |m| m.raw());
        check(unsafe { sys::zf!(zf_session_set_draft_model(self.raw(), d)) })
    }

    /// Number of tokens in the KV cache.
    pub fn n_past(&self) -> Result<usize> {
        let mut n = 0i32;
        check(unsafe { sys::zf!(zf_session_n_past(self.raw(), &mut n)) })?;
        Ok(n.max(0) as usize)
    }

    /// Appends an image at the end of the session as libmtmd places it: the projector's begin
    /// marker, the image's embeddings, the end marker (`zf_session_eval_image`), and returns
    /// the last position's logits. With [`Session::generate`] after it (which continues the
    /// session) this is the raw-prompt route for a prompt with images. The projector must be
    /// the session's model's ([`ErrorCode::InvalidArgument`] otherwise); corrupt bytes are
    /// [`ErrorCode::Format`].
    pub fn eval_image(
        &mut self,
        mmproj: &crate::Mmproj,
        image: crate::Image<'_>,
    ) -> Result<Vec<f32>> {
        let n_vocab = self.inner._model.info()?.n_vocab.max(0) as usize;
        let mut logits = vec![0f32; n_vocab];
        let im = image.raw();
        // SAFETY: im borrows the image's bytes for the call; logits holds n_vocab floats.
        check(unsafe {
            sys::zf!(zf_session_eval_image(
                self.raw(),
                mmproj.raw(),
                &im,
                logits.as_mut_ptr(),
                logits.len()
            ))
        })?;
        Ok(logits)
    }

    /// Appends an audio clip (16 kHz mono samples) at the end of the session as libmtmd places
    /// it: the projector's begin marker (qwen2a, voxtral), the clip's embeddings, the end marker
    /// (`zf_session_eval_audio`), and returns the last position's logits. [`Session::generate`]
    /// after it continues the session (the raw-prompt route). The projector must be an audio
    /// projector of the session's model; it and the samples are checked as
    /// [`Mmproj::embed_audio`](crate::Mmproj::embed_audio) checks them
    /// ([`ErrorCode::InvalidArgument`], nothing appended).
    pub fn eval_audio(&mut self, mmproj: &crate::Mmproj, pcm: &[f32]) -> Result<Vec<f32>> {
        let n_vocab = self.inner._model.info()?.n_vocab.max(0) as usize;
        let mut logits = vec![0f32; n_vocab];
        // SAFETY: pcm is valid for pcm.len() samples; logits holds n_vocab floats.
        check(unsafe {
            sys::zf!(zf_session_eval_audio(
                self.raw(),
                mmproj.raw(),
                pcm.as_ptr(),
                pcm.len(),
                logits.as_mut_ptr(),
                logits.len()
            ))
        })?;
        Ok(logits)
    }

    /// Appends rows of input embeddings (`width` floats each, the model's embedding width; e.g.
    /// an [`ImageEmbedding`](crate::ImageEmbedding)'s data) in place of token embeddings, one
    /// position each (`zf_session_eval_embeddings`), and returns the last position's logits.
    /// `bidirectional`: the rows attend to each other both ways, as Gemma 3 reads an image (at
    /// most 512 rows then). The projector's markers around an image are the caller's
    /// ([`Session::eval_image`] does it all).
    pub fn eval_embeddings(
        &mut self,
        embd: &[f32],
        width: usize,
        bidirectional: bool,
    ) -> Result<Vec<f32>> {
        if width == 0 || embd.len() % width != 0 {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                format!("{} floats are not rows of width {width}", embd.len()),
            ));
        }
        let n_vocab = self.inner._model.info()?.n_vocab.max(0) as usize;
        let mut logits = vec![0f32; n_vocab];
        let flags = if bidirectional {
            sys::ZF_EMBD_BIDIRECTIONAL
        } else {
            0
        };
        // SAFETY: embd holds len / width rows of width floats; logits holds n_vocab floats.
        check(unsafe {
            sys::zf!(zf_session_eval_embeddings(
                self.raw(),
                embd.as_ptr(),
                embd.len() / width,
                width,
                flags as u32,
                logits.as_mut_ptr(),
                logits.len()
            ))
        })?;
        Ok(logits)
    }

    /// Appends tokens to the KV cache and returns the last position's logits (one per
    /// vocabulary entry): for custom samplers and scoring.
    pub fn eval(&mut self, tokens: &[Token]) -> Result<Vec<f32>> {
        let n_vocab = self.inner._model.info()?.n_vocab.max(0) as usize;
        let mut logits = vec![0f32; n_vocab];
        check(unsafe {
            sys::zf!(zf_session_eval(
                self.raw(),
                tokens.as_ptr(),
                tokens.len(),
                logits.as_mut_ptr(),
                logits.len()
            ))
        })?;
        Ok(logits)
    }

    /// Evaluates the prompt and generates until a stop condition; returns the whole text.
    /// A later call continues the conversation. A prompt that does not fit the remaining
    /// context is [`ErrorCode::ContextFull`] (nothing is evaluated).
    ///
    /// ```
    /// # use zerfoo::*;
    /// # let Some(model) = zerfoo::__doc_model() else { return Ok(()) };
    /// let mut session = model.session(&Default::default())?;
    /// let g = session.generate("The capital of France is", &GenerateOptions::greedy(8))?;
    /// println!("{} ({:?}, {:.1} tok/s)", g.text, g.stop_reason, g.tokens_per_second());
    /// # Ok::<(), zerfoo::Error>(())
    /// ```
    pub fn generate(&mut self, prompt: &str, options: &GenerateOptions) -> Result<Generation> {
        self.generate_bytes_with(prompt.as_bytes(), options, |_| ControlFlow::Continue(()))
    }

    /// [`generate`](Session::generate) for a prompt given as bytes: invalid UTF-8 is
    /// [`ErrorCode::InvalidUtf8`] with the library's message.
    pub fn generate_bytes(
        &mut self,
        prompt: &[u8],
        options: &GenerateOptions,
    ) -> Result<Generation> {
        self.generate_bytes_with(prompt, options, |_| ControlFlow::Continue(()))
    }

    /// Generates, passing each piece of text (whole UTF-8 characters) to `on_piece` as it is
    /// produced; returning `ControlFlow::Break(())` stops (stop reason
    /// [`StopReason::Callback`]). The closure runs on this thread during the call.
    ///
    /// A panic in the closure stops generation and is resumed here after the C call returns
    /// (it never unwinds through C); the session stays usable.
    ///
    /// ```
    /// # use zerfoo::*;
    /// # use std::ops::ControlFlow;
    /// # use std::io::Write;
    /// # let Some(model) = zerfoo::__doc_model() else { return Ok(()) };
    /// let mut session = model.session(&Default::default())?;
    /// session.generate_with("Once upon a time", &GenerateOptions::greedy(32), |piece| {
    ///     print!("{piece}");
    ///     std::io::stdout().flush().ok();
    ///     ControlFlow::Continue(())
    /// })?;
    /// # Ok::<(), zerfoo::Error>(())
    /// ```
    pub fn generate_with<F>(
        &mut self,
        prompt: &str,
        options: &GenerateOptions,
        on_piece: F,
    ) -> Result<Generation>
    where
        F: FnMut(&str) -> ControlFlow<()>,
    {
        self.generate_bytes_with(prompt.as_bytes(), options, on_piece)
    }

    /// [`generate_with`](Session::generate_with) for a prompt given as bytes.
    pub fn generate_bytes_with<F>(
        &mut self,
        prompt: &[u8],
        options: &GenerateOptions,
        mut on_piece: F,
    ) -> Result<Generation>
    where
        F: FnMut(&str) -> ControlFlow<()>,
    {
        let params = RawParams::new(options)?;
        let mut state = CallbackState {
            f: &mut on_piece,
            text: String::new(),
            panic: None,
            session: (options.logprobs > 0).then(|| self.raw()),
            logprobs: Vec::new(),
            logprobs_err: None,
        };
        let mut r = empty_result();
        // SAFETY: prompt, params and state outlive the call; the callback runs only during it.
        let st = unsafe {
            sys::zf!(zf_generate(
                self.raw(),
                prompt.as_ptr().cast(),
                prompt.len(),
                &params.p,
                Some(trampoline),
                (&mut state as *mut CallbackState<'_>).cast(),
                &mut r
            ))
        };
        let result = check(st);
        if let Some(payload) = state.panic.take() {
            panic::resume_unwind(payload);
        }
        result?;
        if let Some(e) = state.logprobs_err {
            return Err(e);
        }
        let mut g = Generation::from_raw(state.text, &r);
        g.logprobs = state.logprobs;
        Ok(g)
    }

    /// Starts a pull-style generation: an iterator of text pieces (whole UTF-8 characters).
    /// The prompt is evaluated here, so prompt errors come back at once. Dropping the iterator
    /// early stops the generation and leaves the session ready for the next turn.
    ///
    /// ```
    /// # use zerfoo::*;
    /// # let Some(model) = zerfoo::__doc_model() else { return Ok(()) };
    /// let mut session = model.session(&Default::default())?;
    /// let mut pieces = session.stream("List three colors:", &GenerateOptions::greedy(32))?;
    /// for piece in pieces.by_ref() {
    ///     print!("{}", piece?);
    /// }
    /// println!("\n{:?}", pieces.generation().stop_reason);
    /// # Ok::<(), zerfoo::Error>(())
    /// ```
    pub fn stream<'s>(&'s mut self, prompt: &str, options: &GenerateOptions) -> Result<Pieces<'s>> {
        self.stream_bytes(prompt.as_bytes(), options)
    }

    /// [`stream`](Session::stream) for a prompt given as bytes.
    pub fn stream_bytes<'s>(
        &'s mut self,
        prompt: &[u8],
        options: &GenerateOptions,
    ) -> Result<Pieces<'s>> {
        Pieces::begin(self.raw(), prompt, options)
    }
}

/// Stops a session's generation from any thread ([`Session::cancel_handle`]).
///
/// `cancel` makes the running [`generate`](Session::generate), callback or iterator end at
/// the next token boundary with [`StopReason::Cancelled`]. A cancel with no generation running
/// stops the session's next one at once. The handle keeps the session's memory alive, never
/// the ability to use it.
///
/// ```
/// # use zerfoo::*;
/// # let Some(model) = zerfoo::__doc_model() else { return Ok(()) };
/// let mut session = model.session(&Default::default())?;
/// let cancel = session.cancel_handle();
/// std::thread::spawn(move || {
///     std::thread::sleep(std::time::Duration::from_millis(100));
///     cancel.cancel();
/// });
/// let unbounded = GenerateOptions { max_tokens: None, ignore_eos: true, ..Default::default() };
/// let g = session.generate("Tell me a long story", &unbounded)?;
/// assert_eq!(g.stop_reason, StopReason::Cancelled);
/// # Ok::<(), zerfoo::Error>(())
/// ```
#[derive(Clone)]
pub struct CancelHandle {
    inner: Arc<SessionInner>,
}

impl std::fmt::Debug for CancelHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelHandle")
            .field("session", &self.inner.ptr)
            .finish()
    }
}

impl CancelHandle {
    /// Asks the session's running generation to stop at the next token boundary.
    pub fn cancel(&self) {
        // SAFETY: zf_session_cancel is safe from any thread at any time; the Arc keeps the
        // session allocated.
        unsafe {
            sys::zf!(zf_session_cancel(self.inner.ptr.as_ptr()));
        }
    }
}

/// A pull-style generation ([`Session::stream`]): an iterator of text pieces.
///
/// Each `next` produces one piece of whole UTF-8 characters; an error ends the iteration.
/// Dropping it early stops the generation (as a callback returning `Break` would) and frees
/// it; the session is then ready to continue or reset.
pub struct Pieces<'s> {
    gen: NonNull<sys::zf_generation>,
    session: *mut sys::zf_session,
    logprobs_on: bool,
    piece_logprobs: Vec<TokenLogprobs>,
    logprobs: Vec<TokenLogprobs>,
    buf: Vec<u8>,
    text: String,
    done: bool,
    _session: PhantomData<&'s mut ()>,
}

// SAFETY: the generation, like its session, may move between threads (one at a time).
unsafe impl Send for Pieces<'_> {}

impl std::fmt::Debug for Pieces<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pieces").field("done", &self.done).finish()
    }
}

impl<'s> Pieces<'s> {
    pub(crate) fn begin(
        session: *mut sys::zf_session,
        prompt: &[u8],
        options: &GenerateOptions,
    ) -> Result<Pieces<'s>> {
        let params = RawParams::new(options)?;
        let mut out = ptr::null_mut();
        // SAFETY: the session is alive and exclusively borrowed for 's.
        check(unsafe {
            sys::zf!(zf_generate_begin(
                session,
                prompt.as_ptr().cast(),
                prompt.len(),
                &params.p,
                &mut out
            ))
        })?;
        let gen = NonNull::new(out)
            .ok_or_else(|| Error::new(ErrorCode::Internal, "zf_generate_begin returned NULL"))?;
        Ok(Pieces {
            gen,
            session,
            logprobs_on: options.logprobs > 0,
            piece_logprobs: Vec::new(),
            logprobs: Vec::new(),
            buf: vec![0; 64],
            text: String::new(),
            done: false,
            _session: PhantomData,
        })
    }

    /// Whether the generation has ended (the stop reason is then final).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// With [`GenerateOptions::logprobs`]: the log-probabilities of the tokens behind the piece
    /// returned last (every token sampled since the previous piece, this piece's token last;
    /// a piece may complete several tokens). Empty before the first piece and when off.
    pub fn piece_logprobs(&self) -> &[TokenLogprobs] {
        &self.piece_logprobs
    }

    /// The outcome so far: the text delivered, counts and times (and the logprobs of the
    /// pieces delivered). The stop reason is final once the iterator returned `None`.
    pub fn generation(&self) -> Generation {
        let mut r = empty_result();
        // SAFETY: gen is alive; r has struct_size set. This call cannot fail here.
        unsafe {
            sys::zf!(zf_generation_result(self.gen.as_ptr(), &mut r));
        }
        let mut g = Generation::from_raw(self.text.clone(), &r);
        g.logprobs = self.logprobs.clone();
        g
    }

    /// Drains the remaining pieces and returns the whole [`Generation`].
    pub fn finish(mut self) -> Result<Generation> {
        for piece in self.by_ref() {
            piece?;
        }
        Ok(self.generation())
    }
}

impl Iterator for Pieces<'_> {
    type Item = Result<String>;

    fn next(&mut self) -> Option<Result<String>> {
        if self.done {
            return None;
        }
        loop {
            let (mut len, mut token, mut done) = (0usize, 0i32, 0i32);
            // SAFETY: gen is alive; buf holds buf.len() writable bytes.
            let st = unsafe {
                sys::zf!(zf_generation_next(
                    self.gen.as_ptr(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                    &mut len,
                    &mut token,
                    &mut done
                ))
            };
            if st == sys::ZF_ERR_BUFFER_TOO_SMALL && len > self.buf.len() {
                self.buf.resize(len, 0);
                continue; // the same piece comes again
            }
            if let Err(e) = check(st) {
                self.done = true;
                return Some(Err(e));
            }
            if done != 0 {
                self.done = true;
                return None;
            }
            let piece = String::from_utf8_lossy(&self.buf[..len]).into_owned();
            self.text.push_str(&piece);
            if self.logprobs_on {
                match piece_logprobs(self.session) {
                    Ok(lp) => {
                        self.logprobs.extend_from_slice(&lp);
                        self.piece_logprobs = lp;
                    }
                    Err(e) => {
                        self.done = true;
                        return Some(Err(e));
                    }
                }
            }
            return Some(Ok(piece));
        }
    }
}

impl std::iter::FusedIterator for Pieces<'_> {}

impl Drop for Pieces<'_> {
    fn drop(&mut self) {
        // SAFETY: we own the generation; its session is still borrowed by us, so alive.
        unsafe { sys::zf!(zf_generation_free(self.gen.as_ptr())) }
    }
}
